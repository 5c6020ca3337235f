package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// A reply that will not be sent is reported to its asker (refusedReply):
// an Undeliverable on the control queue, so that the Ask fails at once.

// TestRefusedReplyTellsTheAsker: a reply its full queue refuses, through
// Deliver, DeliverBatch or DeliverDirect, is a dead letter here, and an Undeliverable
// with ErrLinkFull for the same correlation ID waits on the control queue
// for the asker; a one-way message refused so sends nothing.
func TestRefusedReplyTellsTheAsker(t *testing.T) {
	const queueLen = 64
	r, l, _, asker, dead := newBatchSender(t, queueLen)
	from, err := actor.NewRef("12D3KooWLocalPeerOfTheBatchTest", "echo")
	if err != nil {
		t.Fatal(err)
	}
	for i := range queueLen {
		if err := r.Deliver(asker, from, i, uint64(i+1), true); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	if err := r.Deliver(asker, from, "one-way", 0, false); !errors.Is(err, ErrLinkFull) {
		t.Fatalf("a one-way message to a full queue: %v, want ErrLinkFull", err)
	}
	if err := r.Deliver(asker, from, "late", 1000, true); !errors.Is(err, ErrLinkFull) {
		t.Fatalf("a reply to a full queue: %v, want ErrLinkFull", err)
	}
	if n, err := r.DeliverBatch(from, []transport.Outbound{{To: asker, Msg: "later", Corr: 1001, Reply: true}}); n != 0 || !errors.Is(err, ErrLinkFull) {
		t.Fatalf("DeliverBatch of a reply to a full queue: %d, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.DeliverDirect(ctx, asker, from, "direct", 1002, true); !errors.Is(err, ErrLinkFull) {
		t.Fatalf("DeliverDirect of a reply to a full queue: %v, want ErrLinkFull", err)
	}
	got := l.ctl.q.takeBatch(nil)
	if len(got) != 3 {
		t.Fatalf("control queue holds %d messages, want the 3 Undeliverables: %+v", len(got), got)
	}
	for i, corr := range []uint64{1000, 1001, 1002} {
		m := got[i]
		u, ok := m.msg.(transport.Undeliverable)
		if !ok || !errors.Is(u.Reason, ErrLinkFull) || m.corr != corr || !m.reply || m.to != "sink" || m.from != "echo" {
			t.Fatalf("control message %d: %+v, want an Undeliverable reply with ErrLinkFull, corr %d, from echo to sink", i, m, corr)
		}
	}
	if st := r.Stats(); st.RepliesRefused != 3 || st.LinkFull != 4 {
		t.Fatalf("stats %+v: want 3 replies refused, 4 link full", st)
	}
	// The DeliverBatch reply reached the actor system only through the
	// caller (an actor's outbox makes it a dead letter); Deliver's caller
	// likewise. Nothing else was handed back here.
	select {
	case d := <-dead:
		t.Fatalf("dead letter from the router itself: %+v", d)
	default:
	}
	// An Undeliverable that cannot be queued is not answered in turn.
	for l.ctl.q.pushBelow("sink", "echo", transport.Undeliverable{}, 5, true, l.ctl.q.max) {
	}
	if l.refusedReply("sink", "echo", transport.Undeliverable{Reason: ErrLinkFull}, 6, ErrLinkFull) {
		t.Fatal("an Undeliverable was answered with another")
	}
}

// TestWriterRefusedReplyFailsTheAskFast: a reply larger than its peer's
// writer may send (its maximum frame) fails the Ask at once with
// ErrTooLarge, told on the control stream, rather than at its timeout.
func TestWriterRefusedReplyFailsTheAskFast(t *testing.T) {
	ha, ra, sysA := testRouter(t, 0)
	hb, rb, sysB := testRouter(t, 128<<10)
	_ = ra
	if _, err := sysB.Spawn("big", func(c *actor.Context) {
		c.Receive(actor.On(func(string) { c.Reply(make([]byte, 256<<10)) }))
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ha.Connect(ctx, libp2ppeer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	to, err := actor.NewRef(hb.ID().String(), "big")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	v, err := sysA.Ask(ctx, to, "give")
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Ask = %v (%T), %v after %v; want ErrTooLarge", v, v, err, time.Since(t0))
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("Ask failed after %v: want at once", d)
	}
	// The replier counts the refusal once the Undeliverable is queued,
	// which may be after the asker already heard it.
	testutil.EventuallyNil(t, 5*time.Second, func() error {
		if st := rb.Stats(); st.RepliesRefused != 1 || st.TooLarge != 1 {
			return fmt.Errorf("replier's stats %+v: want 1 reply refused, 1 too large", st)
		}
		return nil
	})
}

// TestRefusedReplyFailsTheAskFast: the asker's peer reads its control
// stream but not its user stream, so the replier's user link to it fills
// with replies; the replies refused there fail their Asks at once with
// ErrLinkFull, told on the control stream (as many as its own queue of 8
// took: the refusals come in a burst), while the replies stuck in the
// queue, and those whose Undeliverable found the control queue full,
// leave theirs to their timeout.
func TestRefusedReplyFailsTheAskFast(t *testing.T) {
	const asks, timeout = 40, 2 * time.Second
	ha, _, sysA := testRouter(t, 0)
	hb, rb, sysB := testPeerTuned(t, config{LinkQueue: 8, Logger: testutil.QuietLogger()}, nil)
	release := make(chan struct{})
	ha.SetStreamHandler(ProtoMsg, func(s network.Stream) { // never read
		<-release
		_ = s.Reset()
	})
	t.Cleanup(func() { close(release) }) // before the routers close
	if _, err := sysB.Spawn("echo", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(int) { c.Reply(make([]byte, 32<<10)); c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ha.Connect(ctx, libp2ppeer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	to, err := actor.NewRef(hb.ID().String(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu              sync.Mutex
		told, fast, all int // failed with ErrLinkFull; of them within a second; asks done
		others          []error
		wg              sync.WaitGroup
	)
	for i := range asks {
		wg.Go(func() {
			actx, acancel := context.WithTimeout(ctx, timeout)
			defer acancel()
			t0 := time.Now()
			_, err := sysA.Ask(actx, to, i)
			mu.Lock()
			defer mu.Unlock()
			all++
			switch {
			case errors.Is(err, ErrLinkFull):
				told++
				if time.Since(t0) < time.Second {
					fast++
				}
			case err != nil && !errors.Is(err, context.DeadlineExceeded):
				others = append(others, err)
			}
		})
	}
	wg.Wait()
	// Each ErrLinkFull is a reply refused and told (one told too late
	// for its Ask, on a loaded machine, would time out instead); the
	// replier counts it once queued, maybe after the asker heard it.
	testutil.EventuallyNil(t, 5*time.Second, func() error {
		if st := rb.Stats(); fast == 0 || uint64(told) > st.RepliesRefused {
			return fmt.Errorf("%d of %d asks failed with ErrLinkFull, %d of them at once; the replier told %d refused replies (stats %+v)",
				told, all, fast, st.RepliesRefused, st)
		}
		return nil
	})
	if len(others) > 0 {
		t.Fatalf("asks failed otherwise: %v", others)
	}
	t.Logf("%d of %d asks failed with ErrLinkFull (%d at once), the rest timed out", told, all, fast)
}
