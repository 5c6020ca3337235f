package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cli runs `troupe args...` against home and returns its exit code, stdout
// and stderr.
func cli(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, troupeBinary(t), args...)
	cmd.Env = append(os.Environ(), "TROUPE_HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("troupe %q: %v", args, err)
	return 0, "", ""
}

// cliOK runs a command that must succeed and returns its stdout.
func cliOK(t *testing.T, home string, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, home, args...)
	if code != 0 {
		t.Fatalf("troupe %q: exit %d, stderr %q", args, code, errOut)
	}
	return out
}

// cliJSON runs a command with --json and decodes its output into v.
func cliJSON(t *testing.T, home string, v any, args ...string) {
	t.Helper()
	out := cliOK(t, home, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("troupe %q: output %q is not JSON: %v", args, out, err)
	}
}

// Two daemons on 127.0.0.1; every CLI command goes through the control
// socket of one and reaches the other; metrics are served; a second
// daemon on a home is refused; SIGTERM removes the socket; SIGKILL leaves a
// stale one that the CLI names and a new daemon replaces.
func TestCLIThroughControlSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary")
	}
	t.Parallel() // daemons of its own homes on 127.0.0.1:0; no duration asserted
	a := startDaemonIn(t, "", "-listen", "/ip4/127.0.0.1/tcp/0", "-mdns=false", "-metrics", "127.0.0.1:0")
	b := startDaemon(t, a.addr)
	aID, bID := a.id.String(), b.id.String()

	if fi, err := os.Stat(filepath.Join(a.home, "troupe.sock")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket: %v %v", err, fi)
	}
	var id struct {
		ID           string   `json:"id"`
		Addrs        []string `json:"addrs"`
		Mesh         string   `json:"mesh"`
		Reachability string   `json:"reachability"`
		Version      string   `json:"version"`
	}
	cliJSON(t, a.home, &id, "id")
	if id.ID != aID || id.Mesh != "default" || len(id.Addrs) == 0 || !strings.HasPrefix(id.Addrs[0], "/ip4/127.0.0.1/tcp/") ||
		(id.Reachability != "unknown" && id.Reachability != "private" && id.Reachability != "public") {
		t.Fatalf("id: %+v", id)
	}
	// The daemon says the binary's version, as 'troupe id' does with no
	// daemon (both are the binary's buildVersion).
	idle := t.TempDir()
	cliOK(t, idle, "init")
	var offline struct {
		Version string `json:"version"`
	}
	cliJSON(t, idle, &offline, "id")
	if offline.Version == "" || id.Version != offline.Version {
		t.Fatalf("id: the daemon's version %q, the binary's %q", id.Version, offline.Version)
	}
	if out := cliOK(t, a.home, "id"); !strings.Contains(out, "peer "+aID) || !strings.Contains(out, "\nreachability ") {
		t.Fatalf("id: %q", out)
	}

	var peers []struct {
		ID string `json:"id"`
	}
	cliJSON(t, a.home, &peers, "peers")
	if len(peers) != 1 || peers[0].ID != bID {
		t.Fatalf("peers: %+v", peers)
	}

	if out := cliOK(t, a.home, "actors"); !strings.Contains(out, aID+"/echo\n") || !strings.Contains(out, aID+"/info\n") {
		t.Fatalf("actors: %q", out)
	}
	var actors struct {
		Peer   string   `json:"peer"`
		Actors []string `json:"actors"`
	}
	cliJSON(t, a.home, &actors, "actors", bID)
	if actors.Peer != bID || !strings.Contains(strings.Join(actors.Actors, ","), "echo") {
		t.Fatalf("actors of b: %+v", actors)
	}

	// ask across peers: the JSON comes back as it went.
	if out := cliOK(t, a.home, "ask", bID+"/echo", `{"hi":[1,2.5,"x"]}`); out != `{"hi":[1,2.5,"x"]}`+"\n" {
		t.Fatalf("ask echo: %q", out)
	}
	var info struct {
		Type  string `json:"type"`
		Reply struct {
			Peer    string   `json:"peer"`
			Version string   `json:"version"`
			Actors  []string `json:"actors"`
		} `json:"reply"`
	}
	cliJSON(t, a.home, &info, "ask", bID+"/info", "{}")
	if info.Type != "troupe.Info" || info.Reply.Peer != bID || info.Reply.Version != offline.Version {
		t.Fatalf("ask info: %+v", info)
	}
	var typed struct {
		Type  string `json:"type"`
		Reply string `json:"reply"`
	}
	cliJSON(t, a.home, &typed, "ask", aID+"/echo", `"hello"`, "--type", "string")
	if typed.Type != "string" || typed.Reply != "hello" {
		t.Fatalf("ask with -type: %+v", typed)
	}
	if code, _, errOut := cli(t, a.home, "ask", bID+"/nobody", "1"); code != 1 || !strings.Contains(errOut, "no such actor") {
		t.Fatalf("ask unknown: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, a.home, "send", aID+"/nobody", "1"); code != 1 || !strings.Contains(errOut, "no such actor") {
		t.Fatalf("send to a missing local actor: %d %q", code, errOut)
	}
	if out := cliOK(t, a.home, "send", bID+"/echo", `"x"`); out != "delivered to "+bID+"/echo (its actor replied)\n" {
		t.Fatalf("send: %q", out)
	}
	// A send to a missing actor of another peer is bounced, never "queued".
	if code, out, errOut := cli(t, a.home, "send", bID+"/nobody", "1"); code != 1 || out != "" ||
		!strings.Contains(errOut, "the other peer answered") || !strings.Contains(errOut, "no such actor") {
		t.Fatalf("send to a missing remote actor: %d %q %q", code, out, errOut)
	}
	if out := cliOK(t, b.home, "deadletters", "--json"); !strings.Contains(out, `"to":"`+bID+`/nobody"`) || !strings.Contains(out, `"from_peer":"`+aID+`"`) {
		t.Fatalf("deadletters on the other peer: %s", out)
	}

	out := cliOK(t, a.home, "ping", bID, "-n", "2")
	if strings.Count(out, "pong ") != 2 || !strings.Contains(out, "echo actor round trip") {
		t.Fatalf("ping: %q", out)
	}

	// Metrics: the peer and the frames just exchanged are counted.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(a.metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"troupe_peers 1\n", "troupe_messages_out_total ", "troupe_dead_letters_total ", "troupe_link_queue_depth ", "troupe_watchdog_replacements_total 0\n", "troupe_peer_sheds_total 0\n", "go_goroutines ", "libp2p_"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(string(body), "troupe_messages_out_total 0\n") {
		t.Fatal("no messages counted out")
	}

	// A second daemon on the same home is refused and changes nothing.
	if code, _, errOut := cli(t, a.home, "daemon", "-listen", "/ip4/127.0.0.1/tcp/0", "-mdns=false"); code != 1 || !strings.Contains(errOut, "another troupe process") {
		t.Fatalf("second daemon: %d %q", code, errOut)
	}
	if got := cliOK(t, a.home, "id"); !strings.Contains(got, "peer "+aID) {
		t.Fatalf("first daemon after the refused one: %q", got)
	}

	// SIGTERM: graceful exit, socket removed.
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, a, 0)
	if _, err := os.Stat(filepath.Join(a.home, "troupe.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket after SIGTERM: %v", err)
	}
	if code, _, errOut := cli(t, a.home, "peers"); code != 1 || !strings.Contains(errOut, "no daemon is running") {
		t.Fatalf("peers without daemon: %d %q", code, errOut)
	}

	// SIGKILL: the socket stays, stale; a new daemon takes the home over.
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, b, -1)
	// id needs no daemon: it reads the home, and says the socket is stale.
	if code, out, errOut := cli(t, b.home, "id"); code != 0 || !strings.Contains(out, "peer "+bID) || !strings.Contains(out, "stale") {
		t.Fatalf("id after SIGKILL: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cli(t, b.home, "peers"); code != 1 || !strings.Contains(errOut, "stale") {
		t.Fatalf("peers after SIGKILL: %d %q", code, errOut)
	}
	b2 := startDaemonHome(t, b.home, "", "-listen", "/ip4/127.0.0.1/tcp/0", "-mdns=false")
	if b2.id != b.id {
		t.Fatalf("restarted daemon has peer ID %s, want %s (same identity key)", b2.id, b.id)
	}
	if got := cliOK(t, b.home, "id"); !strings.Contains(got, "peer "+bID) {
		t.Fatalf("id after restart: %q", got)
	}
}

// waitExit waits for a daemon process to exit with code (-1: killed).
func waitExit(t *testing.T, d *daemonProc, code int) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done // before the cleanup's Wait
		t.Fatal("process did not exit")
	}
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	}
	if got != code {
		t.Fatalf("exit code %d (%v), want %d", got, err, code)
	}
}

// TestStopAndConfigShow: 'troupe config show' prints the home's config as
// JSON; a daemon alone prints a hint after 10 s; 'troupe stop' stops the daemon, returns once it is gone (its home
// is free again), and fails cleanly when no daemon runs.
func TestStopAndConfigShow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary")
	}
	t.Parallel() // most of it is the daemon's 10 s before the hint; no duration asserted
	d := startDaemon(t)
	if out := cliOK(t, d.home, "config", "show"); !strings.Contains(out, `"mesh":`) || !strings.Contains(out, `"listen":`) {
		t.Fatalf("config show: %q", out)
	}
	if code, _, errOut := cli(t, d.home, "config", "edit"); code != 2 || !strings.Contains(errOut, "config show") {
		t.Fatalf("config edit: %d %q, want a usage error naming 'config show'", code, errOut)
	}
	// Alone (no mDNS, no -connect), it says why no peer may come.
	d.expectLine(t, 20*time.Second, "no peers after 10s: mDNS is off")
	if out := cliOK(t, d.home, "stop"); out != "stopped "+d.id.String()+"\n" {
		t.Fatalf("stop: %q", out)
	}
	waitExit(t, d, 0)
	if code, _, errOut := cli(t, d.home, "stop"); code != 1 || !strings.Contains(errOut, "no daemon") {
		t.Fatalf("stop with no daemon: %d %q", code, errOut)
	}
}

// TestBashCompletion: the script 'troupe completion bash' prints completes
// commands and flags in a real bash, through the binary on PATH.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	t.Parallel() // bash and the binary only
	dir := t.TempDir()
	if err := os.Symlink(troupeBinary(t), filepath.Join(dir, "troupe")); err != nil {
		t.Fatal(err)
	}
	complete := func(words string, cword int) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		script := `source <(troupe completion bash); COMP_WORDS=(` + words + `); COMP_CWORD=` + string(rune('0'+cword)) + `; _troupe; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.CommandContext(ctx, bash, "--norc", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := complete("troupe da", 1); got != "daemon" {
		t.Fatalf("troupe da<TAB>: %q, want daemon", got)
	}
	if got := complete("troupe daemon -me", 2); got != "-mesh\n-metrics" {
		t.Fatalf("troupe daemon -me<TAB>: %q, want -mesh and -metrics", got)
	}
}
