package actor

import (
	"context"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The reply table: a System.Ask waits in it, not in the registry.

func TestSystemAskTakesNoRegistrySlot(t *testing.T) {
	s := newSys(t)
	type probe struct{}
	type seen struct {
		registered bool
		actors     int
	}
	out := make(chan seen, 1)
	asked := mustSpawn(t, s, "asked", func(c *Context) {
		c.Receive(On(func(probe) {
			_, ok := c.System().Whereis(c.Sender().Name())
			out <- seen{registered: ok, actors: len(c.System().names.all())}
			c.Reply("ok")
		}))
	})
	before := len(s.names.all())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := s.Ask(ctx, asked, probe{}); err != nil || v != "ok" {
		t.Fatalf("ask: %v, %v", v, err)
	}
	got := recv(t, out)
	if got.registered || got.actors != before {
		t.Fatalf("while asking: sender registered %v, %d names (want false, %d)", got.registered, got.actors, before)
	}
}

func TestReplyTableMatchesTheSenderToo(t *testing.T) {
	s := newSys(t)
	var tab replyTable
	w := &waiter{corr: 7, from: s.genRef(0), ch: make(chan *node, 1)}
	if !tab.add(w) {
		t.Fatal("add refused")
	}
	if tab.add(&waiter{corr: 7, from: s.genRef(0), ch: make(chan *node, 1)}) {
		t.Fatal("a second waiter under one correlation ID was added")
	}
	other := Ref{s: s.genRef(0)}
	if tab.complete(other, s.newNode("forged", Ref{}, 7, kindReply)) {
		t.Fatal("a reply addressed to another name completed the Ask")
	}
	if !tab.complete(Ref{s: w.from}, s.newNode("ok", Ref{}, 7, kindReply)) {
		t.Fatal("the reply did not complete the Ask")
	}
	if n := <-w.ch; n.msg != "ok" {
		t.Fatalf("waiter got %v", n.msg)
	}
	if tab.complete(Ref{s: w.from}, s.newNode("again", Ref{}, 7, kindReply)) || tab.remove(w) {
		t.Fatal("the waiter stayed in the table after its reply")
	}
}

func TestConcurrentSystemAsks(t *testing.T) {
	s := newSys(t)
	echo := mustSpawn(t, s, "echo", echoBehavior)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			for j := range 50 {
				v, err := s.Ask(ctx, echo, i*1000+j)
				if err != nil || v != i*1000+j {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("ask: %v (or a wrong reply)", err)
	}
	for i := range s.replies.shards {
		if n := len(s.replies.shards[i].m); n != 0 {
			t.Fatalf("shard %d holds %d waiters after every Ask returned", i, n)
		}
	}
}

// A shard is one cache line, so that Asks on neighbouring shards do not
// contend for one line.
func TestReplyShardIsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(replyShard{}); n != 64 {
		t.Fatalf("a reply shard takes %d bytes, want 64", n)
	}
}
