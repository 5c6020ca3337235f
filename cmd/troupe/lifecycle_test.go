package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// TestLonelyHintUsesWhatDoctorChecks: with no multicast interface the
// hint says so instead of blaming the Wi-Fi, and it counts the peers
// found but not dialed.
func TestLonelyHintUsesWhatDoctorChecks(t *testing.T) {
	cfg := config.Default()
	got := lonelyHintFor(cfg, []ifaceReport{}, 2)
	if strings.Contains(got, "Wi-Fi") || !strings.Contains(got, "no interface here can carry mDNS") || !strings.Contains(got, "2 peers were found but could not be dialed") {
		t.Fatalf("hint: %q", got)
	}
	if got := lonelyHintFor(cfg, []ifaceReport{{Name: "eth0", Addrs: []string{"10.0.0.2/24"}}}, 0); !strings.Contains(got, "UDP 5353") || strings.Contains(got, "dialed") {
		t.Fatalf("hint with an interface: %q", got)
	}
}

// TestVersionSaysGoAndPlatform: version prints the Go version and
// OS/arch, and --json the same as one object.
func TestVersionSaysGoAndPlatform(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "troupe ") || !strings.Contains(out, "go "+runtime.Version()+"\n") || !strings.Contains(out, "os/arch "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("version: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "version", "--json")
	var r versionResult
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Go != runtime.Version() || r.OS != runtime.GOOS || r.Version == "" {
		t.Fatalf("version --json: %d %q %v", code, out, err)
	}
}

// TestIDWithoutADaemon: id reads the home when no daemon runs: the same
// peer ID init printed, the mesh, no addresses; --json says offline.
func TestIDWithoutADaemon(t *testing.T) {
	home := t.TempDir()
	code, out, _ := runCLI(t, "init", "-home", home)
	if code != 0 {
		t.Fatalf("init: %d", code)
	}
	peerLine, _, _ := strings.Cut(out[strings.Index(out, "peer "):], "\n")
	code, out, errOut := runCLI(t, "id", "-home", home)
	if code != 0 || !strings.Contains(out, peerLine+"\n") || !strings.Contains(out, "mesh default") || !strings.Contains(out, "daemon not running") {
		t.Fatalf("id: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "id", "-home", home, "--json")
	var r control.IDResult
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || !r.Offline || "peer "+r.ID != peerLine || len(r.Addrs) != 0 {
		t.Fatalf("id --json: %d %q %v", code, out, err)
	}
}

// TestConfigSet: config set writes one key, checked as config.json is;
// a bad key or value changes nothing and exits 2 with one line.
func TestConfigSet(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct{ key, value, want string }{
		{"mesh", "team-a", `mesh = "team-a"`},
		{"mdns", "false", "mdns = false"},
		{"limits.conns", "64", "limits.conns = 64"},
		{"dead_letters.keep", "16", "dead_letters.keep = 16"},
		{"allowlist", testPeer + ", " + testPeer, `allowlist = ["` + testPeer + `","` + testPeer + `"]`},
		{"listen", `["/ip4/127.0.0.1/tcp/0"]`, `listen = ["/ip4/127.0.0.1/tcp/0"]`},
	} {
		code, out, errOut := runCLI(t, "config", "set", c.key, c.value, "-home", home)
		if code != 0 || !strings.HasPrefix(out, c.want+" in ") {
			t.Fatalf("set %s %s: %d %q %q", c.key, c.value, code, out, errOut)
		}
	}
	cfg, _, err := config.Load(home + "/config.json")
	if err != nil || cfg.Mesh != "team-a" || cfg.MDNS || cfg.Limits.Conns != 64 || cfg.DeadLetters.Keep != 16 || len(cfg.Allowlist) != 2 || cfg.Listen[0] != "/ip4/127.0.0.1/tcp/0" {
		t.Fatalf("config after set: %v %+v", err, cfg)
	}
	for _, c := range []struct{ key, value, want string }{
		{"mesh", "Bad_Mesh", "mesh"},
		{"nosuch", "1", `no key "nosuch"`},
		{"limits", "1", "is a section"},
		{"mesh.x", "1", "not a section"},
		{"mdns", "yes", "mdns takes a bool"},
		{"limits.conns", "-1", "limits.conns"},
		{"limits.conns", "1.5", "limits.conns"},
		{"dead_letters.keep", "100000", "dead_letters.keep"},
		{"log_level", "loud", "log_level"},
		{"listen", "[bad", "listen takes a JSON list"},
	} {
		code, out, errOut := runCLI(t, "config", "-home", home, "set", c.key, "--", c.value)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("set %s %s: %d %q %q, want exit 2 naming %q", c.key, c.value, code, out, errOut, c.want)
			continue
		}
		oneLine(t, "config set", errOut)
	}
	after, _, _ := config.Load(home + "/config.json")
	if after.Mesh != "team-a" || after.Limits.Conns != 64 {
		t.Fatalf("a refused set changed the config: %+v", after)
	}
}

// TestInitJSON: init --json names the home, the peer and whether it was
// created now.
func TestInitJSON(t *testing.T) {
	home := t.TempDir() + "/h"
	for _, created := range []bool{true, false} {
		code, out, _ := runCLI(t, "init", "-home", home, "--json")
		var r struct {
			Home, Peer, Config string
			Created            bool
		}
		if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Home != home || r.Peer == "" || r.Created != created {
			t.Fatalf("init --json (created %v): %d %q %v", created, code, out, err)
		}
	}
}

// TestEventLinesWithTimestamps: with a stamp, each line written starts
// with it.
func TestEventLinesWithTimestamps(t *testing.T) {
	var b strings.Builder
	w := &cli.LockedWriter{W: &b, Stamp: func() string { return "T " }}
	fmt.Fprintf(w, "joined %s\n", "x")
	fmt.Fprintln(w, "left x")
	if b.String() != "T joined x\nT left x\n" {
		t.Fatalf("%q", b.String())
	}
	if _, err := time.Parse(eventTimeFormat, time.Now().Format(eventTimeFormat)); err != nil {
		t.Fatal(err)
	}
}

// TestConfigSetJSON: config set --json says what it wrote, as JSON.
func TestConfigSetJSON(t *testing.T) {
	home := t.TempDir()
	code, out, errOut := runCLI(t, "config", "set", "-json", "mesh", "team-b", "-home", home)
	if code != 0 {
		t.Fatalf("config set -json: %d %q %q", code, out, errOut)
	}
	var r struct {
		Key     string          `json:"key"`
		Value   json.RawMessage `json:"value"`
		Config  string          `json:"config"`
		Running *bool           `json:"daemon_running"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v: %q", err, out)
	}
	if r.Key != "mesh" || string(r.Value) != `"team-b"` || r.Config != home+"/config.json" || r.Running == nil || *r.Running {
		t.Fatalf("config set -json said %+v (%s)", r, out)
	}
}
