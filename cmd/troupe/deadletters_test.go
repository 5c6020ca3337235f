package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// TestFollowDeadLetters: --follow prints the letters kept, then each new
// one as it comes, and ends (exit 1, one line) when the daemon stops.
func TestFollowDeadLetters(t *testing.T) {
	d, h, stop := startStoppableDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
	ghost, _ := actor.NewRef(d.Node().ID().String(), "ghost")
	d.Node().System().Send(ghost, "first")
	out, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"deadletters", "--follow", "--json", "-home", string(h)}, strings.NewReader(""), outW, &errb)
		outW.Close()
	}()
	sc := bufio.NewScanner(out)
	next := func() control.DeadLetter {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("follow ended: %v, stderr %q", sc.Err(), errb.String())
		}
		var e control.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("follow printed %q: %v", sc.Text(), err)
		}
		return e
	}
	if e := next(); e.Seq != 1 || e.To != ghost.String() || e.Type != "string" || e.Size != 6 {
		t.Fatalf("the kept letter: %+v", e)
	}
	d.Node().System().Send(ghost, "second")
	if e := next(); e.Seq != 2 || e.Kind != "no such actor" {
		t.Fatalf("the new letter: %+v", e)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	stop()
	select {
	case code := <-done:
		if code != 1 || errb.String() != "troupe deadletters: the daemon stopped\n" {
			t.Fatalf("after the daemon stopped: exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end with the daemon")
	}
}
