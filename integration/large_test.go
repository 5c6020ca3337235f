package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

// Big is a message of up to 3 MiB (each field is under the codec's 1 MiB
// byte-string limit).
type Big struct {
	Tag     int
	A, B, C []byte
}

func bigOf(tag, size int) Big {
	part := bytes.Repeat([]byte{byte(tag)}, size/3)
	return Big{Tag: tag, A: part, B: part, C: part}
}

func (b Big) intact(tag, size int) bool {
	want := bytes.Repeat([]byte{byte(tag)}, size/3)
	return b.Tag == tag && bytes.Equal(b.A, want) && bytes.Equal(b.B, want) && bytes.Equal(b.C, want)
}

// TestLargeMessageDoesNotStallOthers: a 3 MiB message from one actor
// travels in fragments; 200 small messages another actor sends to the same
// target right after it arrive before it, while a small message from the
// first actor (same pair) still arrives after it.
func TestLargeMessageDoesNotStallOthers(t *testing.T) {
	a, b := pair(t)
	const size, small = 3 << 20, 200
	type arrival struct {
		what string
		n    int
	}
	log := make(chan arrival, small+4)
	sink := spawn(t, b, "sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) {
			switch m := m.(type) {
			case Big:
				if !m.intact(1, size) {
					log <- arrival{"corrupt big", 0}
				}
				log <- arrival{"big", m.Tag}
			case Batch:
				log <- arrival{fmt.Sprint(c.Sender().Name()), m.Seq}
			}
			c.Receive(h)
		})
		c.Receive(h)
	})
	other := spawn(t, a, "other", func(c *actor.Context) {
		c.Receive(actor.On(func(Ping) {
			for i := range small {
				c.Send(sink, Batch{Seq: i})
			}
		}))
	})
	spawn(t, a, "first", func(c *actor.Context) {
		c.Send(sink, bigOf(1, size))
		c.Send(other, Ping{}) // the other actor's messages are queued after the big one
		c.Send(sink, Batch{Seq: -1})
	})
	var order []arrival
	for len(order) < small+2 {
		order = append(order, recv(t, log))
	}
	bigAt, firstAt, otherFirst := -1, -1, -1
	for i, x := range order {
		switch {
		case x.what == "corrupt big":
			t.Fatal("the large message arrived corrupt")
		case x.what == "big":
			bigAt = i
		case x.what == "first":
			firstAt = i
		case x.what == "other" && otherFirst < 0:
			otherFirst = i
		}
	}
	if bigAt < 0 || firstAt < bigAt {
		t.Fatalf("the first actor's small message (at %d) overtook its large one (at %d)", firstAt, bigAt)
	}
	if otherFirst > bigAt {
		t.Fatalf("the other actor's messages waited behind the large one: first at %d, large at %d", otherFirst, bigAt)
	}
	for i, n := 0, 0; i < len(order); i++ {
		if order[i].what == "other" {
			if order[i].n != n {
				t.Fatalf("the other actor's message %d arrived as number %d", order[i].n, n)
			}
			n++
		}
	}
	if st := a.Router().Stats(); st.Sent < small+2 || st.Undeliverable != 0 || st.TooLarge != 0 {
		t.Fatalf("sender stats %+v", st)
	}
}

// TestLargeAskAndReply: a large request and a large reply, both in
// fragments, with pairs of large and small messages from several actors
// in flight; every pair keeps its order and nothing is lost.
// spawnMirror starts an actor "mirror" on n that answers every Big with
// itself.
func spawnMirror(t *testing.T, n *peer.Node) actor.Ref {
	return spawn(t, n, "mirror", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(m Big) { c.Reply(m); c.Receive(h) })
		c.Receive(h)
	})
}

// A large Ask request written on the asker's goroutine (the link's writer
// slept) goes out in fragments: the writer, woken for the rest, finishes
// it.
func TestLargeAskWrittenThrough(t *testing.T) {
	a, b := pair(t)
	echoRef := spawn(t, b, "echo", echo)
	mirror := spawnMirror(t, b)
	ctx, cancel := askCtx()
	defer cancel()
	// Small asks until one is written through: from then on the writer
	// sleeps between round trips.
	for i := 0; a.Router().Stats().WrittenThrough == 0; i++ {
		if i == 50 {
			t.Fatalf("no ask written through: %+v", a.Router().Stats())
		}
		if _, err := a.System().Ask(ctx, echoRef, Ping{i}); err != nil {
			t.Fatal(err)
		}
	}
	before := a.Router().Stats().WrittenThrough
	v, err := a.System().Ask(ctx, mirror, bigOf(7, 300<<10))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(Big); !ok || !m.intact(7, 300<<10) {
		t.Fatalf("reply %T is not the request", v)
	}
	if a.Router().Stats().WrittenThrough == before {
		t.Fatal("the large request was not written through")
	}
}

func TestLargeAskAndReply(t *testing.T) {
	a, b := pair(t)
	mirror := spawnMirror(t, b)
	ctx, cancel := askCtx()
	defer cancel()
	v, err := a.System().Ask(ctx, mirror, bigOf(7, 900<<10))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(Big); !ok || !m.intact(7, 900<<10) {
		t.Fatalf("reply %T is not the request", v)
	}

	// Four senders, each 40 messages to one checker, every third one large.
	const senders, each = 4, 40
	done := make(chan error, 1)
	checker := spawn(t, b, "checker", func(c *actor.Context) {
		next := map[string]int{}
		total := 0
		var h actor.Case
		h = actor.Any(func(m any) {
			var seq int
			switch m := m.(type) {
			case Big:
				seq = m.Tag
				if !m.intact(m.Tag, 120<<10) {
					done <- fmt.Errorf("message %d from %s corrupt", seq, c.Sender().Name())
					return
				}
			case Batch:
				seq = m.Seq
			}
			from := c.Sender().Name()
			if seq != next[from] {
				done <- fmt.Errorf("%s: message %d arrived when %d was due", from, seq, next[from])
				return
			}
			next[from]++
			if total++; total == senders*each {
				done <- nil
				return
			}
			c.Receive(h)
		})
		c.Receive(h)
	})
	for s := range senders {
		spawn(t, a, fmt.Sprint("sender", s), func(c *actor.Context) {
			for i := range each {
				if i%3 == 0 {
					c.Send(checker, bigOf(i, 120<<10))
				} else {
					c.Send(checker, Batch{Seq: i})
				}
			}
		})
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAskDuringLargeTransfer: b.N asks from plain code on node a to an
// echo actor on node b while an actor on a streams 3 MiB messages to b
// (two in flight). The asks travel on the same stream as the large
// messages, between their fragments.
func BenchmarkAskDuringLargeTransfer(b *testing.B) {
	na, nb := pair(b)
	echoRef := spawn(b, nb, "echo", echo)
	const size = 3 << 20
	sink := spawn(b, nb, "bulk", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(Big) { c.Send(c.Sender(), Ack{}); c.Receive(h) })
		c.Receive(h)
	})
	stop := make(chan struct{})
	var sent atomic.Int64
	spawn(b, na, "pump", func(c *actor.Context) {
		msg := bigOf(3, size)
		c.Send(sink, msg)
		c.Send(sink, msg)
		sent.Add(2)
		var h actor.Case
		h = actor.On(func(Ack) {
			select {
			case <-stop:
				return
			default:
			}
			c.Send(sink, msg)
			sent.Add(1)
			c.Receive(h)
		})
		c.Receive(h)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		v, err := na.System().Ask(ctx, echoRef, Ping{i})
		lat = append(lat, time.Since(t0))
		if err != nil || v != (Pong{i}) {
			b.Fatalf("ask %d: %v, %v", i, v, err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	close(stop)
	reportLatency(b, lat)
	b.ReportMetric(float64(sent.Load())*size/el.Seconds()/(1<<20), "large-MiB/s")
}

// TestPeersWithDifferentMaxFrames: a node refuses, one by one, the
// messages over its maximum frame that a node with a larger maximum sends
// (whole, or in fragments); an Ask whose request or reply is refused
// fails at once with ErrTooLarge, and the messages around them arrive in
// order on a stream that goes on.
func TestPeersWithDifferentMaxFrames(t *testing.T) {
	a, b := newNode(t), newNode(t, peer.WithMaxFrame(16<<10))
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	mirror := spawnMirror(t, b)
	grow := spawn(t, a, "grow", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(p Ping) { c.Reply(bigOf(p.N, 100<<10)); c.Receive(h) })
		c.Receive(h)
	})
	for _, size := range []int{30 << 10, 300 << 10} { // one frame; fragments
		start := time.Now()
		if _, err := a.System().Ask(ctx, mirror, bigOf(1, size)); !errors.Is(err, routing.ErrTooLarge) {
			t.Fatalf("a request of %d bytes over the receiver's maximum: %v, want ErrTooLarge", size, err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("the refused request of %d bytes took %v to fail", size, el)
		}
	}
	if _, err := b.System().Ask(ctx, grow, Ping{N: 2}); !errors.Is(err, routing.ErrTooLarge) {
		t.Fatalf("a reply over the asker's maximum: %v, want ErrTooLarge", err)
	}
	got := make(chan int, 200)
	sink := spawn(t, b, "sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(m Batch) { got <- m.Seq; c.Receive(h) })
		c.Receive(h)
	})
	spawn(t, a, "sender", func(c *actor.Context) {
		for i := range 100 {
			if i == 50 {
				c.Send(sink, bigOf(3, 30<<10))
				c.Send(sink, bigOf(4, 300<<10))
			}
			c.Send(sink, Batch{Seq: i})
		}
	})
	for i := range 100 {
		if n := recv(t, got); n != i {
			t.Fatalf("message %d arrived as number %d", n, i)
		}
	}
	if st := b.Router().Stats(); st.TooLargeIn != 5 || st.StreamsReset != 0 || st.DecodeErrors != 0 {
		t.Fatalf("receiver stats %+v: want 5 refused, nothing reset", st)
	}
	if v, err := b.System().Ask(ctx, mirror, bigOf(5, 3000)); err != nil || !v.(Big).intact(5, 3000) {
		t.Fatalf("a small Ask after the refusals: %v", err)
	}
}
