package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/chat"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/peer"
)

const testPeer = "12D3KooWPxUj3pRpgHZ8dtpriYyBXwHnu4Uh7iUYXGXPTyzHCVX8"

// runCLI runs the command line with a fresh home and returns exit code,
// stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// oneLine fails unless s is exactly one line.
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("%s: want one line, got %q", what, s)
	}
}

func TestEveryBadArgumentExitsTwoWithOneLine(t *testing.T) {
	t.Setenv("TROUPE_HOME", t.TempDir())
	for _, args := range [][]string{
		{"nonsense"},
		{"--nonsense"},
		{"init", "extra"},
		{"init", "-nosuchflag"},
		{"daemon", "-nosuchflag"},
		{"daemon", "-listen", "not-a-multiaddr"},
		{"daemon", "-metrics", "nocolon"},
		{"daemon", "-metrics", "127.0.0.1:99999"},
		{"daemon", "-ui", "0.0.0.0:8080"},
		{"daemon", "-ui", "nocolon"},
		{"daemon", "-ui", "127.0.0.1:99999"},
		{"top", "extra"},
		{"connect"},
		{"connect", "/ip4/127.0.0.1/tcp/1"},
		{"connect", "/ip4/127.0.0.1/tcp/1/p2p/" + testPeer, "extra"},
		{"connect", "-timeout", "0s", "/ip4/127.0.0.1/tcp/1/p2p/" + testPeer},
		{"top", "-n", "-1"},
		{"id", "extra"},
		{"id", "-json=maybe"},
		{"peers", "extra"},
		{"actors", "not-a-peer-id"},
		{"actors", testPeer, "extra"},
		{"actors", "-timeout", "-1s"},
		{"send"},
		{"send", testPeer + "/echo"},
		{"send", "no slash", "{}"},
		{"send", "notapeer/echo", "{}"},
		{"send", testPeer + "/echo", "{not json"},
		{"send", testPeer + "/echo", "{} {}"},
		{"send", testPeer + "/echo", "{}", "-type", "bad type"},
		{"send", testPeer + "/echo", "{}", "extra"},
		{"ask", testPeer + "/echo", "[1,"},
		{"ask", testPeer + "/echo", "1", "-timeout", "0s"},
		{"ask", testPeer + "/echo", "1e999"},
		{"ask", testPeer + "/", "1"},
		{"ping"},
		{"ping", "nope"},
		{"ping", testPeer, "-n", "0"},
		{"chat"},
		{"chat", "-nick", "bad nick"},
		{"chat", "-nick", "ok", "-room", "no/slash"},
		{"chat", "-nick", "ok", "-connect", "/ip4/127.0.0.1/tcp/1"},
		{"chat", "-nick", "ok", "extra"},
		{"demo", "-ring", "1"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 {
			t.Fatalf("%q: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
		oneLine(t, strings.Join(args, " "), errOut)
	}
}

func TestHelpEverywhere(t *testing.T) {
	for _, cmd := range []string{"init", "daemon", "id", "peers", "top", "actors", "send", "ask", "ping", "connect", "chat", "demo"} {
		code, _, errOut := runCLI(t, cmd, "-h")
		if code != 0 || !strings.Contains(errOut, "usage: troupe "+cmd) || !strings.Contains(errOut, "-home") && cmd != "demo" {
			t.Fatalf("%s -h: exit %d, %q", cmd, code, errOut)
		}
	}
}

func TestInitCreatesKeyAndConfig(t *testing.T) {
	home := filepath.Join(t.TempDir(), "h")
	code, out, errOut := runCLI(t, "init", "-home", home)
	if code != 0 || !strings.Contains(out, "initialized "+home) || !strings.Contains(out, "peer 12D3KooW") {
		t.Fatalf("init: %d %q %q", code, out, errOut)
	}
	for name, mode := range map[string]os.FileMode{"identity.key": 0o600, "config.json": 0o600, "": 0o700} {
		fi, err := os.Stat(filepath.Join(home, name))
		if err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("%s: %v, mode %v, want %v", name, err, fi.Mode().Perm(), mode)
		}
	}
	cfg, exists, err := config.Load(filepath.Join(home, "config.json"))
	if err != nil || !exists || cfg.Mesh != "default" || !cfg.MDNS || cfg.DHT != "client" || cfg.NATPortMap {
		t.Fatalf("config: %+v %v %v", cfg, exists, err)
	}
	first := out[strings.Index(out, "peer "):]
	code, out, _ = runCLI(t, "init", "-home", home)
	if code != 0 || !strings.Contains(out, "already initialized") || !strings.Contains(out, first) {
		t.Fatalf("second init changed the identity or failed: %d %q", code, out)
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"mesh": "Bad_Mesh"}`, "mesh"},
		{`{"listen": []}`, "listen"},
		{`{"listen": ["nope"]}`, "listen"},
		{`{"bootstrap": ["/ip4/127.0.0.1/tcp/1"]}`, "bootstrap"},
		{`{"dht": "sometimes"}`, "dht"},
		{`{"allowlist": ["bob"]}`, "allowlist"},
		{`{"relay_members": ["bob"]}`, "relay_members"},
		{`{"log_level": "loud"}`, "log_level"},
		{`{"log_format": "xml"}`, "log_format"},
		{`{"relays": ["/ip4/127.0.0.1/tcp/1"]}`, "relays"},
		{`{"metrics": "9090"}`, "metrics"},
		{`{"metrics": "127.0.0.1:99999"}`, "metrics"},
		{`{"metrics": "127.0.0.1:http"}`, "metrics"},
		{`{"Mesh": "other"}`, `unknown field "Mesh"`},
		{`{"limits": {"Conns": 10}}`, `unknown field "limits.Conns"`},
		{`{"limits": {"streams_per_peer": -1}}`, "limits.streams_per_peer"},
		{`{"limits": {"memory_mib": 2000000}}`, "limits.memory_mib"},
		{`{"limits": {"stream_window_kib": 100}}`, "limits.stream_window_kib"},
		{`{"limits": {"stream_window_kib": -1}}`, "limits.stream_window_kib"},
		{`{"limits": {"conns": "many"}}`, `"limits.conns"`},
		{`{"limits": {"fd": 10}}`, `unknown field "fd"`},
		{`{"mdns": "yes"}`, `"mdns"`},
		{`{"colour": "blue"}`, `unknown field "colour"`},
		{`{"mesh": "a"`, "invalid JSON"},
		{``, "empty file"},
		{`{} {}`, "more than one JSON value"},
		{`{"psk_file": "missing.key", "listen": ["/ip4/127.0.0.1/tcp/0"], "mdns": false}`, "psk_file"},
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(c.json), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI(t, "daemon", "-home", home)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Fatalf("config %s: exit %d, stderr %q, want 2 and %q", c.json, code, errOut, c.want)
		}
		oneLine(t, c.json, errOut)
	}
}

func TestHomeNotWritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"daemon", "-home", filepath.Join(file, "home")}, {"init", "-home", file}} {
		code, _, errOut := runCLI(t, args...)
		if code == 0 || !strings.Contains(errOut, "-home or TROUPE_HOME") {
			t.Fatalf("%q: exit %d, %q", args, code, errOut)
		}
		oneLine(t, "home", errOut)
	}
}

func TestNoDaemonAndStaleSocket(t *testing.T) {
	home := t.TempDir()
	code, _, errOut := runCLI(t, "id", "-home", home)
	if code != 1 || !strings.Contains(errOut, "no daemon is running on "+home) || !strings.Contains(errOut, "troupe daemon") {
		t.Fatalf("no daemon: %d %q", code, errOut)
	}
	oneLine(t, "no daemon", errOut)
	// A socket file that nobody serves, as a killed daemon leaves it.
	ln, err := net.Listen("unix", filepath.Join(home, "troupe.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	code, _, errOut = runCLI(t, "peers", "-home", home)
	if code != 1 || !strings.Contains(errOut, "stale") {
		t.Fatalf("stale socket: %d %q", code, errOut)
	}
	oneLine(t, "stale", errOut)
}

func TestSecondLockHolderIsRefused(t *testing.T) {
	h := cli.Home(t.TempDir())
	unlock, err := h.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Lock(); err == nil || !strings.Contains(err.Error(), "pid "+itoa(os.Getpid())) {
		t.Fatalf("second lock: %v", err)
	}
	unlock()
	unlock2, err := h.Lock()
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestFlagsAfterArguments(t *testing.T) {
	fs := cli.NewFlags("x", "A B", "test", &bytes.Buffer{})
	typ := fs.String("type", "", "")
	pos, ok, _ := cli.ParseArgs(fs, []string{"a", "-type", "T", "b"}, 2, 2)
	if !ok || *typ != "T" || strings.Join(pos, ",") != "a,b" {
		t.Fatalf("%v %q %q", ok, *typ, pos)
	}
	fs = cli.NewFlags("x", "A B", "test", &bytes.Buffer{})
	pos, ok, _ = cli.ParseArgs(fs, []string{"a", "--", "-1"}, 2, 2)
	if !ok || strings.Join(pos, ",") != "a,-1" {
		t.Fatalf("after --: %v %q", ok, pos)
	}
}

func TestChatNamesChecked(t *testing.T) {
	for _, good := range []string{"a", "Alice_2", "x-y"} {
		if err := chat.CheckName("nick", good); err != nil {
			t.Fatalf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "a b", "a/b", strings.Repeat("x", 25), "é"} {
		if err := chat.CheckName("nick", bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// homeWithSwarmKey returns a home directory holding a valid swarm.key.
func homeWithSwarmKey(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	key := "/key/swarm/psk/1.0.0/\n/base16/\n" + strings.Repeat("ab", 32) + "\n"
	if err := os.WriteFile(filepath.Join(home, "swarm.key"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// startFromConfig starts a node from cfg in home, closed when the test ends.
func startFromConfig(t *testing.T, cfg config.Config, home string) *peer.Node {
	t.Helper()
	opts, err := cfg.PeerOptions(home)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := peer.New(ctx, append(opts, peer.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		t.Fatalf("node from config: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n
}

// TestPSKWithTheDefaultListenShape: a psk_file with listen addresses of
// the default's shape (TCP and QUIC) starts a node, on TCP only.
func TestPSKWithTheDefaultListenShape(t *testing.T) {
	home := homeWithSwarmKey(t)
	cfg := config.Default()
	cfg.PSKFile, cfg.DHT, cfg.MDNS = "swarm.key", "off", false
	cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"} // on loopback only
	n := startFromConfig(t, cfg, home)
	for _, a := range n.Addrs() {
		if strings.Contains(a.String(), "/quic") {
			t.Fatalf("listening on %v with a PSK", a)
		}
	}
}

func TestConfigOptions(t *testing.T) {
	home := homeWithSwarmKey(t)
	cfg := config.Default()
	cfg.PSKFile, cfg.DHT, cfg.Bootstrap, cfg.Allowlist = "swarm.key", "server", []string{"/ip4/127.0.0.1/tcp/1/p2p/" + testPeer}, []string{testPeer}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.PeerOptions(home); err != nil {
		t.Fatal(err)
	}
	// A node starts from such a configuration (DHT and mDNS off: nothing
	// leaves 127.0.0.1).
	cfg.DHT, cfg.MDNS, cfg.Listen = "off", false, []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Limits = config.ConfigLimits{MemoryMiB: 512, ConnsInbound: 100, StreamsPerPeer: 256, StreamWindowKiB: 4096}
	startFromConfig(t, cfg, home)
	if err := os.WriteFile(filepath.Join(home, "swarm.key"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.PeerOptions(home); err == nil || !strings.Contains(err.Error(), "psk_file") {
		t.Fatalf("bad key file: %v", err)
	}
}
