package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/codec"
)

// TestDeadLetterRecordsAreCleaned: text another peer chose (names, a type,
// a reason) reaches the terminal with no control characters, and the
// sender's peer is its own field.
func TestDeadLetterRecordsAreCleaned(t *testing.T) {
	to, _ := actor.NewRef("peerA", "ghost")
	from, _ := actor.NewRef("peerB", "sender")
	got := toDeadLetters([]actor.DeadLetterRecord{{Seq: 7, Time: time.Unix(5, 0), To: to, From: from, Type: "evil\x1b[2Jtype", Size: 3, Kind: "no such actor", Reason: "remote:\u202e\x07 text"}})
	e := got[0]
	if strings.ContainsAny(e.Type+e.Reason, "\x1b\x07\u202e") || e.FromPeer != "peerB" || e.From != "peerB/sender" || e.To != "peerA/ghost" || e.Seq != 7 || e.Size != 3 {
		t.Fatalf("%+v", e)
	}
	line := deadLetterLine(e)
	for _, want := range []string{"#7", "no such actor", "to peerA/ghost", "from peerB/sender", "3 B"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if l := deadLetterLine(control.DeadLetter{Size: -1}); !strings.Contains(l, "from -") || !strings.Contains(l, "size unknown") {
		t.Errorf("line of a letter from plain code: %q", l)
	}
}

// TestDescribeMessage: a Raw is described by its type and body as they
// came, a registered value by its name and encoded size, anything else
// by its Go type with the size unknown.
func TestDescribeMessage(t *testing.T) {
	reg, err := newRegistry()
	if err != nil {
		t.Fatal(err)
	}
	describe := describeMessage(reg)
	if typ, n := describe(codec.Raw{Type: "x.Y", Body: []byte{0x01}}); typ != "x.Y" || n != 1 {
		t.Errorf("raw: %q %d", typ, n)
	}
	if typ, n := describe(codec.Raw{Type: "x.Big"}); typ != "x.Big" || n != -1 {
		t.Errorf("raw refused before its body: %q %d", typ, n)
	}
	if typ, n := describe("hello"); typ != "string" || n != 6 {
		t.Errorf("string: %q %d", typ, n)
	}
	// Unencodable: no name, so that actor names its Go type.
	if typ, n := describe(make(chan int)); typ != "" || n != -1 {
		t.Errorf("unencodable: %q %d", typ, n)
	}
}

// TestAskCauseSaysItOnce: the daemon's "asking <ref>" replaces actor's
// own "actor: ask <ref>:" wrapping; other errors stay as they are.
func TestAskCauseSaysItOnce(t *testing.T) {
	wrapped := errors.Join(errors.New("x"))
	if askCause(wrapped, "peerA") != wrapped {
		t.Error("an error without actor's ask wrapping was changed")
	}
	to, _ := actor.NewRef("peerA", "ghost")
	s, err := actor.New(actor.WithPeer("peerB"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	_, err = s.Ask(t.Context(), to, 1)
	if c := askCause(err, "peerA"); !errors.Is(c, actor.ErrNoRoute) || strings.Contains(c.Error(), "ask") {
		t.Fatalf("askCause(%v) = %v", err, c)
	}
	if isBounce(actor.ErrNoRoute) || !isBounce(actor.ErrNoSuchActor) || !isBounce(actor.ErrMailboxFull) {
		t.Fatal("isBounce: no route is ours, no such actor and a full mailbox are the other peer's")
	}
}

// TestFollowDeadLetters: --follow prints the letters kept, then each new
// one as it comes, and ends (exit 1, one line) when the daemon stops.
func TestFollowDeadLetters(t *testing.T) {
	d, h, stop := startStoppableDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
	ghost, _ := actor.NewRef(d.node.ID().String(), "ghost")
	d.node.System().Send(ghost, "first")
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
	d.node.System().Send(ghost, "second")
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
