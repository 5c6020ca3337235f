package actor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Panics in handlers, guards, Flush and the dead-letter hook give back
// every count they held.

// TestPanickingHandlerGivesBackItsCredit: the message whose handler
// panicked is given back to its Credit like any other, or a peer whose
// messages make an actor panic would keep its budget held for good.
func TestPanickingHandlerGivesBackItsCredit(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	ref := mustSpawn(t, s, "", func(c *Context) { c.Receive(On(func(string) { panic("boom") })) })
	down := watcher(t, s, ref)
	credit := newCredit(0)
	in := inboundFrom(s, credit)
	in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: "first", Size: 100})
	in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: "second", Size: 10})
	in.Close()
	recv(t, down)
	creditBack(t, credit, "after the actor died")
}

// TestFlushPanicHandsNothingOverTwice: a hook that panics in Flush (the
// reader recovers, then closes its Inbound, which flushes again) does not
// make the runs handed over before it go over again; the charges balance.
func TestFlushPanicHandsNothingOverTwice(t *testing.T) {
	s := newSys(t, WithPeer("me"), WithDeadLetterHook(func(d DeadLetter) {
		if d.Msg == "boom" {
			panic("hook")
		}
	}))
	got := make(chan any, 8)
	ref := mustSpawn(t, s, "", func(c *Context) {
		var h Case
		h = Any(func(m any) { got <- m; c.Receive(h) })
		c.Receive(h)
	})
	credit := newCredit(0)
	in := inboundFrom(s, credit)
	far := mustRef(t, "them/x")
	in.Add(&envelope{To: ref, From: far, Msg: "a", Size: 100})
	in.Add(&envelope{To: mustRef(t, "me/nobody"), From: far, Msg: "boom", Size: 100})
	func() {
		defer func() { _ = recover() }()
		in.Flush()
	}()
	in.Close()
	s.Send(ref, "sync")
	for _, want := range []any{"a", "sync"} {
		if m := recv(t, got); m != want {
			t.Fatalf("got %v, want %v (a run handed over twice?)", m, want)
		}
	}
}

// TestPanickingGuardGivesBackItsCredit: a guard that panics while testing
// a message from another peer does not keep that message's bytes charged.
func TestPanickingGuardGivesBackItsCredit(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(OnWhen(func(string) bool { panic("guard") }, func(string) {}))
	})
	down := watcher(t, s, ref)
	credit := newCredit(0)
	in := inboundFrom(s, credit)
	in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: "first", Size: 100})
	in.Close()
	recv(t, down)
	creditBack(t, credit, "after the actor died")
}

// TestPanickingDeadLetterHook: a dead-letter hook that panics costs no
// credit: shedding saved messages, or an actor stopping with messages in
// its mailbox, still gives every byte back, and the actor that shed them
// lives on.
func TestPanickingDeadLetterHook(t *testing.T) {
	var hooked atomic.Int32
	s := newSys(t, WithPeer("me"), WithDeadLetterHook(func(DeadLetter) {
		hooked.Add(1)
		panic("hook")
	}))
	got := make(chan any, 8)
	ref, gate := gated(t, s, got)
	credit := newCredit(0)
	in := inboundFrom(s, credit)
	for _, m := range []string{"a", "b", "c"} {
		in.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: m, Size: 100})
	}
	in.Close()
	if k := s.port.ShedSaved(credit); k != 1 {
		t.Fatalf("ShedSaved asked %d actors, want 1", k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := credit.WaitLow(ctx); err != nil {
		t.Fatalf("held %d after the shed: %v", credit.Held(), err)
	}
	if n := hooked.Load(); n != 3 {
		t.Fatalf("hook called %d times, want 3", n)
	}
	s.Send(gate, "stop")
	s.Send(ref, "alive")
	if m := recv(t, got); m != "alive" {
		t.Fatalf("got %v, want alive", m)
	}
	// An actor that stops with messages from the peer in its mailbox.
	block := make(chan struct{})
	stuck := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(Any(func(any) { <-block; c.Stop() }))
	})
	in = inboundFrom(s, credit)
	for _, m := range []string{"d", "e", "f", "g"} {
		in.Add(&envelope{To: stuck, From: mustRef(t, "them/x"), Msg: m, Size: 100})
	}
	in.Close()
	close(block)
	if err := credit.WaitLow(ctx); err != nil {
		t.Fatalf("held %d after the actor stopped: %v", credit.Held(), err)
	}
}

// creditBack waits, 5 s at most, until credit holds nothing.
func creditBack(t *testing.T, credit *spi.Credit, when string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := credit.WaitLow(ctx); err != nil {
		t.Fatalf("held %d %s: %v", credit.Held(), when, err)
	}
}
