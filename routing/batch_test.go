package routing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// newBatchSender is newSender with a link queue of queueLen messages and
// a dead-letter hook feeding the returned channel.
func newBatchSender(t *testing.T, queueLen int) (*Router, *link, *actor.System, actor.Ref, <-chan actor.DeadLetter) {
	t.Helper()
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	codec.MustRegister[benchBlob](reg, "bench.Blob")
	logger := testutil.QuietLogger()
	const remote = "12D3KooWRemotePeerOfTheBatchTest"
	r := &Router{cfg: config{Registry: reg, Logger: logger, MaxFrame: codec.DefaultMaxFrame, LinkQueue: queueLen, timings: defaultTimings()},
		log: logger, links: map[string]*link{}}
	l := newLink(r, "", remote)
	r.links[remote] = l
	r.fast.Store(remote, l)
	dead := make(chan actor.DeadLetter, 1024)
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		r.sys = p
		return r, nil, nil
	}, actor.WithPeer("12D3KooWLocalPeerOfTheBatchTest"), actor.WithLogger(logger),
		actor.WithLoops(1), actor.WithDeadLetterHook(func(d actor.DeadLetter) { dead <- d }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	to, err := actor.NewRef(remote, "sink")
	if err != nil {
		t.Fatal(err)
	}
	return r, l, sys, to, dead
}

// TestActorSendsReachQueueInOrder: what an actor sends to another peer in
// one activation (more than one outbox run) is queued in order, and a
// message beyond the room the link's queue has for one-way messages (see
// rooms.admits) is a dead letter with ErrLinkFull, counted once, as with
// Deliver.
func TestActorSendsReachQueueInOrder(t *testing.T) {
	const queueLen0, total = 150, 200
	queueLen := fill(newOutQueue(queueLen0), oneWay) // the one-way room: more than two outbox runs fit
	r, l, sys, to, dead := newBatchSender(t, queueLen0)
	if _, err := sys.Spawn("source", func(c *actor.Context) {
		for i := range total {
			c.Send(to, benchBlob{Data: []byte{byte(i)}})
		}
	}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for i := queueLen; i < total; i++ {
		select {
		case d := <-dead:
			if !errors.Is(d.Reason, ErrLinkFull) || d.Msg.(benchBlob).Data[0] != byte(i) || d.From.Name() != "source" {
				t.Fatalf("dead letter %d: %+v", i, d)
			}
		case <-timeout:
			t.Fatalf("%d of %d dead letters", i-queueLen, total-queueLen)
		}
	}
	if st := r.Stats(); st.LinkFull != uint64(total-queueLen) || st.QueuedUser != queueLen {
		t.Fatalf("stats %+v", st)
	}
	next := 0
	for l.user.q.len() > 0 {
		for _, m := range l.user.q.takeBatch(nil) {
			if m.to != "sink" || m.from != "source" || m.msg.(benchBlob).Data[0] != byte(next) {
				t.Fatalf("message %d: %+v", next, m)
			}
			next++
		}
	}
	if next != queueLen {
		t.Fatalf("%d queued, want %d", next, queueLen)
	}
}

// TestActorSendsFlushedWhenIdle: a few messages, far from a full outbox
// run, reach the link queue when the activation ends, without any
// further activation; those an actor sends in its last step too.
func TestActorSendsFlushedWhenIdle(t *testing.T) {
	for _, stop := range []bool{false, true} {
		_, l, sys, to, _ := newBatchSender(t, 1024)
		q := l.user.q
		q.mu.Lock()
		q.right.holder = heldByNone // as a writer that found the queue empty
		q.mu.Unlock()
		if _, err := sys.Spawn("", func(c *actor.Context) {
			for i := range 3 {
				c.Send(to, benchBlob{Data: []byte{byte(i)}})
			}
			if !stop {
				c.Receive(actor.On(func(struct{}) {}))
			}
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-q.ready:
		case <-time.After(10 * time.Second):
			t.Fatalf("stop=%v: the writer was not woken", stop)
		}
		if n := q.len(); n != 3 {
			t.Fatalf("stop=%v: %d messages queued, want 3", stop, n)
		}
	}
}
