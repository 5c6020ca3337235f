package actor

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Sends in runs (context_send.go): an actor's messages to its last
// partner are pushed at once, when it sends to another, sends a signal,
// joins, leaves or broadcasts to a group, terminates or ends its activation. These tests
// pin the order that keeps, and when a send becomes visible.

type seqMsg struct {
	from string
	i    int
}

// collector receives seqMsg and whatever else into got, and reports on
// done once it has want messages.
func collector(want int, done chan<- []any) Behavior {
	return func(c *Context) {
		c.TrapExit(true)
		var got []any
		forever(c, func() []Case {
			return []Case{Any(func(m any) {
				if got = append(got, m); len(got) == want {
					done <- got
				}
			})}
		})
	}
}

// inOrder checks that the seqMsg of each sender in got are numbered 0, 1, ...
// and returns how many there were.
func inOrder(t *testing.T, got []any) int {
	t.Helper()
	next := map[string]int{}
	n := 0
	for _, m := range got {
		s, ok := m.(seqMsg)
		if !ok {
			continue
		}
		if s.i != next[s.from] {
			t.Fatalf("message %d of %s arrived as number %d: %v", s.i, s.from, next[s.from], got)
		}
		next[s.from]++
		n++
	}
	return n
}

func TestSendRunsKeepOrderAcrossPartners(t *testing.T) {
	s := newSys(t)
	const per = 300 // runs to b broken by sends to c (TestPerSenderOrder has long runs)
	toC := 0
	for i := range per {
		if i%7 == 0 || i%3 == 0 {
			toC++
		}
	}
	doneB, doneC := make(chan []any, 1), make(chan []any, 1)
	b := mustSpawn(t, s, "b", collector(per, doneB))
	cRef := mustSpawn(t, s, "c", collector(toC, doneC))
	mustSpawn(t, s, "", func(c *Context) {
		k := 0
		for i := range per {
			c.Send(b, seqMsg{"a", i})
			if i%7 == 0 || i%3 == 0 {
				c.Send(cRef, seqMsg{"a", k})
				k++
			}
		}
	})
	if got := recv(t, doneB); inOrder(t, got) != per {
		t.Fatalf("b got %d messages, want %d", len(got), per)
	}
	if got := recv(t, doneC); inOrder(t, got) != toC {
		t.Fatalf("c got %d messages, want %d", len(got), toC)
	}
}

func TestSendRunGoesBeforeTheExitSignal(t *testing.T) {
	s := newSys(t)
	const per = 100
	done := make(chan []any, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.TrapExit(true)
		parent := c.Self()
		if _, err := c.SpawnLink("", func(c *Context) {
			for i := range per {
				c.Send(parent, seqMsg{"child", i})
			}
			c.Exit(errBoom)
		}); err != nil {
			t.Error(err)
		}
		var got []any
		forever(c, func() []Case {
			return []Case{Any(func(m any) {
				if got = append(got, m); len(got) == per+1 {
					done <- got
				}
			})}
		})
	})
	got := recv(t, done)
	if n := inOrder(t, got[:per]); n != per {
		t.Fatalf("%d messages before the exit, want %d: %v", n, per, got)
	}
	if e, ok := got[per].(Exit); !ok || !errors.Is(e.Reason, errBoom) {
		t.Fatalf("last %v, want the child's Exit", got[per])
	}
}

func TestSendRunGoesBeforeJoined(t *testing.T) {
	s := newSys(t)
	const per = 50
	done := make(chan []any, 1)
	watching := make(chan struct{})
	b := mustSpawn(t, s, "", func(c *Context) {
		if err := c.join("g", true); err != nil {
			t.Error(err)
		}
		close(watching)
		collector(per+1, done)(c) // a's messages, then its Joined
	})
	<-watching
	mustSpawn(t, s, "", func(c *Context) {
		for i := range per {
			c.Send(b, seqMsg{"a", i})
		}
		if err := c.join("g", false); err != nil {
			t.Error(err)
		}
	})
	got := recv(t, done)
	if n := inOrder(t, got[:per]); n != per {
		t.Fatalf("%d of a's messages before its Joined, want %d: %v", n, per, got)
	}
	if j, ok := got[per].(joinedMsg); !ok || j.Member == b {
		t.Fatalf("last %v, want a's Joined", got[per])
	}
}

// A broadcast reaching a partner with a run pending goes after the run:
// it is a send of the same actor (group.Broadcast calls broadcast).
func TestSendRunGoesBeforeABroadcast(t *testing.T) {
	s := newSys(t)
	const per = 50
	done := make(chan []any, 1)
	joined := make(chan struct{})
	b := mustSpawn(t, s, "", func(c *Context) {
		if err := c.join("g", false); err != nil {
			t.Error(err)
		}
		close(joined)
		collector(per+1, done)(c)
	})
	<-joined
	mustSpawn(t, s, "", func(c *Context) {
		for i := range per {
			c.Send(b, seqMsg{"a", i})
		}
		if err := c.broadcast("g", "all"); err != nil {
			t.Error(err)
		}
	})
	got := recv(t, done)
	if n := inOrder(t, got[:per]); n != per {
		t.Fatalf("%d of a's messages before its broadcast, want %d: %v", n, per, got)
	}
	if got[per] != "all" {
		t.Fatalf("last %v, want the broadcast", got[per])
	}
}

// A reply to plain code's Ask goes after the run pending to a partner,
// as a send to any other actor would: once System.Ask returned, what the
// replier sent before replying is in its targets' mailboxes, and a
// message plain code then sends arrives after it.
func TestSendRunGoesBeforeAReplyToPlainCode(t *testing.T) {
	s := newSys(t, WithLoops(1), WithWatchdog(0)) // b cannot run before a's activation ends
	done := make(chan []any, 1)
	b := mustSpawn(t, s, "b", collector(2, done))
	proceed := make(chan struct{})
	a := mustSpawn(t, s, "a", func(c *Context) {
		c.Receive(Any(func(any) {
			c.Send(b, "before")
			c.Reply("ok")
			<-proceed // the activation, and so the run, goes on after the reply
		}))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Ask(ctx, a, "go"); err != nil {
		t.Fatal(err)
	}
	s.Send(b, "after")
	close(proceed)
	if got := recv(t, done); got[0] != "before" || got[1] != "after" {
		t.Fatalf("b got %v, want [before after]", got)
	}
}

// The written decision (docs/architecture.md, "What is ordered", 6.): a
// local send becomes visible to its target when the sender sends to
// another actor, sends a signal, or its activation ends, not at the
// call: code outside
// the actor system that a handler tells about a send (through a channel,
// say) may look before the message is in the target's mailbox. A thread
// sends at once.
func TestSendRunIsVisibleAtTheEndOfTheActivation(t *testing.T) {
	s := newSys(t, WithLoops(1)) // b never runs while a does: its inbox is as a left it
	done := make(chan []any, 1)
	b := mustSpawn(t, s, "b", collector(3, done))
	target := s.names.load(b.Name())
	seen := make(chan [3]bool, 1)
	mustSpawn(t, s, "", func(c *Context) {
		var v [3]bool
		c.Send(b, seqMsg{"a", 0})
		v[0] = target.inbox.nonEmpty()
		c.Send(b, seqMsg{"a", 1})
		v[1] = target.inbox.nonEmpty()
		c.Monitor(b) // a signal: the run goes first
		v[2] = target.inbox.nonEmpty()
		seen <- v
		c.Send(b, seqMsg{"a", 2}) // at the end of the activation
	})
	if v := recv(t, seen); v[0] || v[1] || !v[2] {
		t.Fatalf("visible after the first send, second, monitor: %v, want false, false, true", v)
	}
	if got := recv(t, done); inOrder(t, got) != 3 {
		t.Fatalf("b got %v", got)
	}
}

func TestThreadSendsAtOnce(t *testing.T) {
	s := newSys(t, WithLoops(1), WithWatchdog(0))
	hold, held := make(chan struct{}), make(chan struct{})
	mustSpawn(t, s, "", func(c *Context) { close(held); <-hold }) // occupies the one loop
	<-held
	b := mustSpawn(t, s, "b", func(c *Context) { c.Receive(Any(func(any) {})) })
	target := s.names.load(b.Name())
	seen := make(chan bool, 1)
	if _, err := s.SpawnThread("", func(th *Thread) {
		th.Send(b, seqMsg{"thread", 0})
		seen <- target.inbox.nonEmpty() // b cannot run: the loop is held
	}); err != nil {
		t.Fatal(err)
	}
	v := recv(t, seen)
	close(hold)
	if !v {
		t.Fatal("a thread's send was not in the target's inbox when Send returned")
	}
}
