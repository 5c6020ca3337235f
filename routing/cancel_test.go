package routing

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// The cancellations a broken stream leaves (demonitors, unlinks): first on
// the next stream, once, and dropped when the peer cannot be reached.

// The cancellation of a monitor request handed back by a broken stream
// goes out first on the next stream, ahead of a new monitor of the same
// actors queued while the old stream was breaking: at the peer, the new
// monitor stays.
func TestCancellationPrecedesWhatWasQueuedMeanwhile(t *testing.T) {
	r, l, _, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil {
		t.Fatal(err)
	}
	w := &l.ctl.w
	w.batch = append(w.batch[:0], outMsg{to: "sink", from: "source", msg: transport.MonitorSignal{ID: 7}})
	// Queued while the stream was breaking, after the batch in hand.
	if !l.ctl.q.pushBelow("sink", "source", transport.MonitorSignal{ID: 8}, 0, false, l.ctl.q.max) {
		t.Fatal("queue full")
	}
	w.broken(errors.New("stream reset"))
	// The next stream.
	var wire bytes.Buffer
	w.fw = codec.NewFrameWriter(&wire, r.cfg.MaxFrame)
	w.batch = l.ctl.q.takeBatch(w.batch[:0])
	if err := w.put(); err != nil {
		t.Fatal(err)
	}
	if err := w.fw.Flush(); err != nil {
		t.Fatal(err)
	}
	wantMessages(t, r, &wire, transport.DemonitorSignal{ID: 7}, transport.MonitorSignal{ID: 8})
}

// A cancellation goes out once, on the first stream that takes a flush,
// and no more after that; streams that keep breaking make the writer drop
// it after maxBreaks.
func TestCancellationsAreSentOnce(t *testing.T) {
	r, l, _, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil {
		t.Fatal(err)
	}
	w := &l.ctl.w
	broken := &fakeStream{err: network.ErrReset} // by the peer, which declares any loss
	w.use(broken)
	w.batch = append(w.batch[:0], monitorMsg(7))
	if err := w.send(time.Time{}); err == nil || w.s != nil || len(w.undo) != 1 {
		t.Fatalf("send on a broken stream: %v, stream %v, undo %+v", err, w.s, w.undo)
	}
	var wire bytes.Buffer
	w.use(&fakeStream{w: &wire})
	for _, id := range []actor.MonitorID{8, 9} {
		w.batch = append(w.batch[:0], monitorMsg(id))
		if err := w.send(time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	wantMessages(t, r, &wire, transport.DemonitorSignal{ID: 7}, transport.MonitorSignal{ID: 8}, transport.MonitorSignal{ID: 9})
	w.batch = append(w.batch[:0], monitorMsg(10))
	for i := 1; i <= maxBreaks; i++ {
		w.use(broken)
		if err := w.send(time.Time{}); err == nil {
			t.Fatal("a broken stream took a flush")
		}
		w.batch = w.batch[:0]
		if want := min(1, maxBreaks-i); len(w.undo) != want {
			t.Fatalf("after %d breaks in a row: %d cancellations kept, want %d", i, len(w.undo), want)
		}
	}
}

// A writer with cancellations pending does not sleep: it opens a stream
// for them, and drops them once it gives the peer up as unreachable.
func TestWriterReopensForCancellations(t *testing.T) {
	dropped := make(chan struct{}, 1)
	_, r, _ := testRouterLogging(t, 0, slog.New(onMessage{logDroppedUndo, dropped}))
	other := testhost.NewHost(t, libp2p.NoListenAddrs)
	gone := other.ID()
	_ = other.Close() // no address known: every dial fails at once
	l, err := r.link(gone.String())
	if err != nil {
		t.Fatal(err)
	}
	w, q := &l.ctl.w, l.ctl.q
	claimRight(t, q)
	w.undo = append(w.undo, outMsg{to: "x", from: "y", msg: transport.DemonitorSignal{ID: 1}})
	q.handBack(true, nil) // as after a write-through whose stream broke
	select {
	case <-dropped: // three dials, about 0.3 s
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellations were neither sent nor dropped within 10 s")
	}
	// Once the writer sleeps again (it does not redial for them), it
	// keeps none.
	claimRight(t, q)
	left := len(w.undo)
	q.handBack(false, nil)
	if left != 0 {
		t.Fatalf("%d cancellations still kept", left)
	}
}

// claimRight takes q's writing right from its sleeping writer, as a
// write-through's push does, waiting up to 10 s for the writer to sleep.
// The caller hands it back (outQueue.handBack).
func claimRight(t *testing.T, q *outQueue) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, "the writer sleeps, its right free", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.right.step(evClaim, false) == rightClaimed
	})
}
