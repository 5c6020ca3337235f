package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// gated spawns an actor that saves every message until its gate, an
// actor it monitors, stops; it then hands everything it has and gets to
// got. It returns the actor and its gate (which stops on any message).
// The Down that opens the gate is a signal: no mailbox limit refuses it.
func gated(t *testing.T, s *System, got chan<- any, opts ...SpawnOption) (ref, gate Ref) {
	t.Helper()
	gate = mustSpawn(t, s, "", func(c *Context) { c.Receive(Any(func(any) {})) })
	ready := make(chan struct{})
	ref = mustSpawn(t, s, "", func(c *Context) {
		c.Monitor(gate)
		close(ready)
		c.Receive(On(func(Down) {
			var h Case
			h = Any(func(m any) { got <- m; c.Receive(h) })
			c.Receive(h)
		}))
	}, opts...)
	recv(t, ready)
	return ref, gate
}

// deadLetters returns a system option that passes every dead letter on.
func deadLetters(ch chan<- DeadLetter) Option {
	return WithDeadLetterHook(func(d DeadLetter) {
		select {
		case ch <- d:
		default:
		}
	})
}

// TestMailboxLimit: an actor spawned WithMailboxLimit(2) holds at most two
// user messages unhandled; a third is a dead letter with ErrMailboxFull,
// an Ask beyond it fails at once, and room comes back as it handles them.
func TestMailboxLimit(t *testing.T) {
	dead := make(chan DeadLetter, 8)
	s := newSys(t, deadLetters(dead))
	got := make(chan any, 8)
	ref, gate := gated(t, s, got, WithMailboxLimit(2))
	s.Send(ref, "a")
	s.Send(ref, "b")
	s.Send(ref, "c")
	if d := recv(t, dead); d.Msg != "c" || !errors.Is(d.Reason, ErrMailboxFull) {
		t.Fatalf("dead letter %+v, want c with ErrMailboxFull", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Ask(ctx, ref, "d"); !errors.Is(err, ErrMailboxFull) {
		t.Fatalf("ask of a full mailbox: %v, want ErrMailboxFull", err)
	}
	if n := s.MailboxOverflows(); n != 2 {
		t.Fatalf("%d overflows, want 2", n)
	}
	s.Send(gate, "stop") // the Down is not refused: the actor then handles a and b
	expectInOrder(t, got, "a", "b")
	// The count of the message just handled may not be back yet: one
	// message at a time always finds room.
	for _, want := range []any{"e", "f", "g"} {
		s.Send(ref, want)
		if m := recv(t, got); m != want {
			t.Fatalf("got %v, want %v", m, want)
		}
	}
	if n := s.MailboxOverflows(); n != 2 {
		t.Fatalf("%d overflows after handling, want still 2", n)
	}
}

// expectInOrder receives len(want) messages from got and fails unless
// they are want, in order.
func expectInOrder(t *testing.T, got <-chan any, want ...any) {
	t.Helper()
	for _, w := range want {
		if m := recv(t, got); m != w {
			t.Fatalf("got %v, want %v", m, w)
		}
	}
}

// noDeadLetter fails when dead holds a dead letter already (why: what
// that would mean).
func noDeadLetter(t *testing.T, dead <-chan DeadLetter, why string) {
	t.Helper()
	select {
	case d := <-dead:
		t.Fatalf("dead letter %+v: %s", d, why)
	default:
	}
}

// inboundFrom returns an Inbound of s that charges credit, as a stream
// reader of another peer's messages does.
func inboundFrom(s *System, credit *spi.Credit) *inbound {
	in := s.port.NewInbound()
	in.SetCredit(credit)
	return in
}

// TestCreditHeldUntilHandled: a message from another peer stays charged to
// its peer's Credit while it waits or is saved, and is given back once
// handled; WaitLow returns then.
func TestCreditHeldUntilHandled(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	got := make(chan any, 8)
	ref, gate := gated(t, s, got)
	credit := newCredit(100)
	in := inboundFrom(s, credit)
	far := mustRef(t, "them/x")
	for _, m := range []string{"a", "b", "c"} {
		in.Add(&envelope{To: ref, From: far, Msg: m, Size: 100})
	}
	in.Flush()
	if h := credit.Held(); h != 300 {
		t.Fatalf("held %d, want 300", h)
	}
	waited := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() { waited <- credit.WaitLow(ctx) }()
	// Saved, not handled: still held.
	s.Send(ref, "sync")
	select {
	case err := <-waited:
		t.Fatalf("WaitLow returned with %d held: %v", credit.Held(), err)
	default:
	}
	s.Send(gate, "stop")
	for range 4 {
		recv(t, got)
	}
	if err := recv(t, waited); err != nil {
		t.Fatal(err)
	}
	in.Close()
}

// TestRemoteBacklog: an actor holds at most WithRemoteBacklog bytes of
// messages from other peers; beyond it they are dead letters with
// ErrMailboxFull, given back to their Credit at once, while messages
// from this peer still arrive.
func TestRemoteBacklog(t *testing.T) {
	dead := make(chan DeadLetter, 8)
	s := newSys(t, WithPeer("me"), withRemoteBacklog(250), deadLetters(dead))
	got := make(chan any, 8)
	ref, gate := gated(t, s, got)
	credit := newCredit(0)
	in := inboundFrom(s, credit)
	far := mustRef(t, "them/x")
	for _, m := range []string{"a", "b", "c"} {
		in.Add(&envelope{To: ref, From: far, Msg: m, Size: 100})
	}
	in.Flush()
	if d := recv(t, dead); d.Msg != "c" || !errors.Is(d.Reason, ErrMailboxFull) {
		t.Fatalf("dead letter %+v, want c with ErrMailboxFull", d)
	}
	if h := credit.Held(); h != 200 {
		t.Fatalf("held %d, want 200", h)
	}
	s.Send(ref, "local") // not charged, not refused
	s.Send(gate, "stop")
	var order []any
	for range 3 {
		order = append(order, recv(t, got))
	}
	if s := fmt.Sprint(order); s != "[a b local]" && s != "[a local b]" { // in turn: lanes.go
		t.Fatalf("handled %s, want a before b, and local", s)
	}
	// Room again: a run of two is taken whole.
	in.Add(&envelope{To: ref, From: far, Msg: "d", Size: 100})
	in.Add(&envelope{To: ref, From: far, Msg: "e", Size: 100})
	in.Close()
	expectInOrder(t, got, "d", "e")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := credit.WaitLow(ctx); err != nil { // low is 0
		t.Fatalf("held %d after everything was handled: %v", credit.Held(), err)
	}
	if n := s.MailboxOverflows(); n != 1 {
		t.Fatalf("%d overflows, want 1", n)
	}
}

// TestSavedMessagesKeepTheirLimitCount: messages from a transport that
// charges no Credit, saved for a later receive, still count against
// WithMailboxLimit until handled, and stop counting then.
func TestSavedMessagesKeepTheirLimitCount(t *testing.T) {
	dead := make(chan DeadLetter, 8)
	s := newSys(t, WithPeer("me"), deadLetters(dead))
	got := make(chan any, 8)
	ref, gate := gated(t, s, got, WithMailboxLimit(2))
	in := s.port.NewInbound() // no Credit
	in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: "a"})
	in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: "b"})
	in.Close()
	s.Send(gate, "stop")
	expectInOrder(t, got, "a", "b")
	for _, want := range []any{"c", "d"} { // one at a time: see TestMailboxLimit
		s.Send(ref, want)
		if m := recv(t, got); m != want {
			t.Fatalf("got %v, want %v", m, want)
		}
	}
	noDeadLetter(t, dead, "the handled messages still counted")
}

// TestRemoteBacklogIsPerPeer: the backlog is counted per peer (Credit):
// one peer that filled an actor's backlog with messages the actor saves
// gets its next message refused, while another peer's still go through.
func TestRemoteBacklogIsPerPeer(t *testing.T) {
	dead := make(chan DeadLetter, 8)
	s := newSys(t, WithPeer("me"), withRemoteBacklog(250), deadLetters(dead))
	got := make(chan any, 8)
	ref, gate := gated(t, s, got)
	hostile, other := newCredit(0), newCredit(0)
	in := inboundFrom(s, hostile)
	for _, m := range []string{"a", "b", "c"} {
		in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: m, Size: 100})
	}
	in.Close()
	if d := recv(t, dead); d.Msg != "c" || !errors.Is(d.Reason, ErrMailboxFull) {
		t.Fatalf("dead letter %+v, want c with ErrMailboxFull", d)
	}
	in = inboundFrom(s, other)
	in.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: "x", Size: 200})
	in.Close()
	s.Send(gate, "stop")
	// Each peer's in order; the two peers' in turn (lanes.go), or as they
	// came when the actor took them in different batches.
	var order []any
	for range 3 {
		order = append(order, recv(t, got))
	}
	if s := fmt.Sprint(order); s != "[a b x]" && s != "[a x b]" {
		t.Fatalf("handled %s, want a before b, and x", s)
	}
	noDeadLetter(t, dead, "the other peer's message was refused")
}

// TestShedSaved: ShedSaved drops the saved messages charged to one
// Credit (dead letters wrapping ErrMailboxFull, the Credit back to 0) and
// keeps those of other peers.
func TestShedSaved(t *testing.T) {
	dead := make(chan DeadLetter, 8)
	s := newSys(t, WithPeer("me"), deadLetters(dead))
	got := make(chan any, 8)
	ref, gate := gated(t, s, got)
	paused, other := newCredit(0), newCredit(0)
	in := inboundFrom(s, paused)
	in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: "a", Size: 100})
	in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: "b", Size: 100})
	in.Close()
	in = inboundFrom(s, other)
	in.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: "x", Size: 100})
	in.Close()
	if k := s.port.ShedSaved(paused); k != 1 {
		t.Fatalf("ShedSaved asked %d actors, want 1", k)
	}
	for _, want := range []any{"a", "b"} {
		if d := recv(t, dead); d.Msg != want || !errors.Is(d.Reason, ErrMailboxFull) {
			t.Fatalf("dead letter %+v, want %v with ErrMailboxFull", d, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := paused.WaitLow(ctx); err != nil {
		t.Fatalf("held %d after the shed: %v", paused.Held(), err)
	}
	if h := other.Held(); h != 100 {
		t.Fatalf("the other peer's credit holds %d, want 100", h)
	}
	s.Send(gate, "stop")
	if m := recv(t, got); m != "x" {
		t.Fatalf("got %v, want x (a and b were shed)", m)
	}
	if n := s.MailboxOverflows(); n != 2 {
		t.Fatalf("%d overflows, want 2", n)
	}
}

// TestConcurrentFirstHolds: holds of one Credit that race for an actor's
// first slot all count in the same place, so giving them back leaves
// nothing held.
func TestConcurrentFirstHolds(t *testing.T) {
	cr := newCredit(0)
	for run := range 20000 {
		var a mailboxAcct
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { a.hold(cr, 10, 1<<20, true) })
		}
		wg.Wait()
		a.unhold(cr, 10)
		a.unhold(cr, 10)
		if a.holds(cr) || a.firstHeld.Load() != 0 || len(a.held) != 0 {
			t.Fatalf("run %d: %d in the first slot, %v in the map after giving all back", run, a.firstHeld.Load(), a.held)
		}
	}
}
