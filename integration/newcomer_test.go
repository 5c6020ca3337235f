package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNewcomerSession is what a new user does, step by step, with the
// real binary: start a daemon (JSON log), two peers join, send to an
// unknown actor here and on a peer, read the dead letters (and follow
// them), change the log level, stop. Each step's output is checked; the
// daemon's log is slog's JSON only, every line with a time; no error
// line says a phrase twice.
func TestNewcomerSession(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and runs three daemons")
	}
	t.Parallel() // daemons of its own homes on 127.0.0.1:0; no duration asserted
	var logA syncBuffer
	a := startDaemonLogged(t, t.TempDir(), "", &logA, "-listen", "/ip4/127.0.0.1/tcp/0", "-mdns=false", "-log-format", "json", "-log-level", "info")
	aID := a.id.String()
	b := startDaemon(t, a.addr)
	c := startDaemon(t, a.addr)
	bID := b.id.String()
	a.expectLine(t, 20*time.Second, "joined "+bID, "(echo")
	a.expectLine(t, 20*time.Second, "joined "+c.id.String(), "(echo")

	errLines := map[string]string{}
	fails := func(step string, code int, args ...string) string {
		t.Helper()
		got, out, errOut := cli(t, a.home, args...)
		if got != code || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%s: exit %d (want %d), stdout %q, stderr %q", step, got, code, out, errOut)
		}
		errLines[step] = errOut
		return errOut
	}

	// Unknown actors: here an error at once; on a peer, what it answered.
	if e := fails("unknown local actor", 1, "send", aID+"/nobody", "1"); !strings.Contains(e, `no such actor "nobody" on this peer`) {
		t.Fatalf("send to a missing local actor: %q", e)
	}
	if e := fails("unknown remote actor", 1, "send", bID+"/nobody", `{"n":1}`); !strings.Contains(e, "the other peer answered") || !strings.Contains(e, "no such actor") {
		t.Fatalf("send to a missing remote actor: %q", e)
	}
	fails("bad JSON", 2, "send", bID+"/echo", "{bad")
	const stranger = "12D3KooWPxUj3pRpgHZ8dtpriYyBXwHnu4Uh7iUYXGXPTyzHCVX8"
	if e := fails("wrong address", 1, "connect", "/ip4/127.0.0.1/tcp/1/p2p/"+stranger, "-timeout", "5s"); !strings.Contains(e, "connecting to "+stranger+": ") || strings.Count(e, stranger) != 1 {
		t.Fatalf("connect to a wrong address: %q", e)
	}
	if out := cliOK(t, a.home, "connect", "/ip4/127.0.0.1/tcp/1/p2p/"+bID); !strings.HasPrefix(out, "already connected to "+bID+" via another address, /ip4/127.0.0.1/") {
		t.Fatalf("connect to a wrong address of a connected peer: %q", out)
	}
	// peers prints addresses that connect takes as they are.
	var peers []struct {
		ID    string   `json:"id"`
		Addrs []string `json:"addrs"`
	}
	cliJSON(t, a.home, &peers, "peers")
	var bAddrs []string
	for _, p := range peers {
		if p.ID == bID {
			bAddrs = p.Addrs
		}
	}
	if len(peers) != 2 || len(bAddrs) == 0 || !slices.Contains(bAddrs, b.addr.String()) || slices.ContainsFunc(bAddrs, func(a string) bool { return strings.Contains(a, "/tcp/1/") }) {
		t.Fatalf("peers: %+v; b listens on %s", peers, b.addr)
	}
	if out := cliOK(t, a.home, "connect", bAddrs[0]); out != "connected "+bID+" (direct)\n" {
		t.Fatalf("connect to an address peers printed: %q", out)
	}

	// The peer's dead letters: listed, and followed as they come.
	out := cliOK(t, b.home, "deadletters")
	if !strings.HasPrefix(out, "1 dead letter since the daemon started: 1 no such actor\n") || !strings.Contains(out, "to "+bID+"/nobody from "+aID+"/") || !strings.Contains(out, ", troupe.JSON, ") {
		t.Fatalf("deadletters: %q", out)
	}
	follow := exec.Command(troupeBinary(t), "deadletters", "--follow", "--json", "-home", b.home)
	dieWithTest(follow)
	var followErr syncBuffer
	follow.Stderr = &followErr
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			var m map[string]any
			if !ok || json.Unmarshal([]byte(l), &m) != nil {
				t.Fatalf("follow: %q (open %v), stderr %q", l, ok, followErr.String())
			}
			return m
		case <-time.After(15 * time.Second):
			t.Fatalf("follow printed nothing; stderr %q", followErr.String())
			return nil
		}
	}
	if m := next(); m["to"] != bID+"/nobody" || m["seq"] != 1.0 { // the one kept already
		t.Fatalf("follow, first: %v", m)
	}
	fails("unknown remote actor, again", 1, "send", bID+"/ghost", "2")
	if m := next(); m["to"] != bID+"/ghost" || m["kind"] != "no such actor" || m["from_peer"] != aID || m["seq"] != 2.0 {
		t.Fatalf("follow, new: %v", m)
	}
	if err := follow.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := follow.Wait(); err != nil {
		t.Fatalf("follow after SIGINT: %v, stderr %q", err, followErr.String())
	}

	// The log level, changed while the daemon runs.
	if out := cliOK(t, a.home, "log", "level"); out != "log level info\n" {
		t.Fatalf("log level: %q", out)
	}
	if out := cliOK(t, a.home, "log", "level", "debug"); out != "log level debug (was info)\n" {
		t.Fatalf("log level debug: %q", out)
	}
	waitWithin(t, 10*time.Second, func() bool {
		return strings.Contains(logA.String(), `"level":"INFO","msg":"log level changed","level":"debug"`)
	})

	// Stop: the daemon says why, and is gone.
	if out := cliOK(t, a.home, "stop"); out != "stopped "+aID+"\n" {
		t.Fatalf("stop: %q", out)
	}
	waitExit(t, a, 0)
	log := logA.String()
	for _, want := range []string{`"msg":"daemon stopping","reason":"troupe stop"`, `"msg":"daemon stopped","uptime":`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
	for line := range strings.Lines(log) {
		var rec struct {
			Time  time.Time `json:"time"`
			Level string    `json:"level"`
			Msg   string    `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Time.IsZero() || rec.Level == "" || rec.Msg == "" {
			t.Errorf("a log line that is not slog's JSON with a time: %q", line)
		}
	}
	for step, line := range errLines {
		if p := testutil.RepeatedPhrase(line); p != "" {
			t.Errorf("%s: %q says %q twice", step, line, p)
		}
	}
}
