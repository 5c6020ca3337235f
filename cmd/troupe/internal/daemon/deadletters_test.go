package daemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// TestDeadLetterRecordsAreCleaned: text another peer chose (names, a type,
// a reason) reaches the terminal with no control characters, and the
// sender's peer is its own field (the line of it: TestDeadLetterLine in
// package main).
func TestDeadLetterRecordsAreCleaned(t *testing.T) {
	to, _ := actor.NewRef("peerA", "ghost")
	from, _ := actor.NewRef("peerB", "sender")
	got := toDeadLetters([]actor.DeadLetterRecord{{Seq: 7, Time: time.Unix(5, 0), To: to, From: from, Type: "evil\x1b[2Jtype", Size: 3, Kind: "no such actor", Reason: "remote:\u202e\x07 text"}})
	e := got[0]
	if strings.ContainsAny(e.Type+e.Reason, "\x1b\x07\u202e") || e.FromPeer != "peerB" || e.From != "peerB/sender" || e.To != "peerA/ghost" || e.Seq != 7 || e.Size != 3 {
		t.Fatalf("%+v", e)
	}
}

// TestDescribeMessage: a Raw is described by its type and body as they
// came, a registered value by its name and encoded size, anything else
// by its Go type with the size unknown.
func TestDescribeMessage(t *testing.T) {
	reg, err := NewRegistry()
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
