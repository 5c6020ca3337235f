package routing

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// The loss protocol's bounds: stale loss messages, requests for
// declarations, presumed losses, refused streams.

// Loss messages queued to a peer that disconnected or restarted since
// (actForget raised the link's floor) are not sent: the peer starts
// anew, and would take this node down for nothing.
func TestStaleLossMessagesAreNotSent(t *testing.T) {
	r, l, _, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil {
		t.Fatal(err)
	}
	w, q := &l.ctl.w, l.ctl.q
	q.pushBelow(lossTo, "", lostBody{Session: 3}, 3, false, q.max)
	q.pushBelow(lossTo, "", resetBody{}, 4, false, q.max)
	l.lossFloor.Store(4)
	q.pushBelow(lossTo, "", lostBody{Session: 5}, 5, false, q.max)
	var wire bytes.Buffer
	w.use(&fakeStream{w: &wire})
	w.batch = q.takeBatch(w.batch[:0])
	if err := w.send(time.Time{}); err != nil {
		t.Fatal(err)
	}
	wantMessages(t, r, &wire, lostBody{Session: 5})
	if st := r.Stats(); st.Sent != 0 || l.traffic.Load() {
		t.Fatalf("sent %d, traffic %v: loss messages count as neither", st.Sent, l.traffic.Load())
	}
}

// A peer that asks without end for declarations gets one per burst of
// traffic it was sent: each covers every loss before it, and none costs
// a queue that grows.
func TestRequestsForDeclarationsAreBounded(t *testing.T) {
	handled := make(chan struct{}, 256)
	hA, rA, sysA := testRouter(t, 0)
	rA.hooks.lossMessage = func() { handled <- struct{}{} }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctl := newRawFramesOn(t, hA, ProtoCtl) // the raw peer B
	ctl.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7, Stream: 1})
	received := serveFrames(ctl.h, func(env *codec.Envelope) bool { return env.Kind == codec.KindUser }, ProtoMsg, ProtoMsg10)
	serveCtl(t, ctl.h)
	sink, _ := actor.NewRef(ctl.h.ID().String(), "sink")
	for burst := 1; burst <= 2; burst++ {
		sysA.Send(sink, "traffic")
		recvWithin(t, ctx, received)
		for range 100 {
			ctl.send(codec.KindSystem, typeReset, resetBody{})
		}
		for range 100 {
			recvWithin(t, ctx, handled)
		}
		if got := rA.Stats().LossesDeclared; got != uint64(burst) {
			t.Fatalf("after %d bursts of traffic and 100 requests each: %d losses declared", burst, got)
		}
	}
}

// A request that will not be sent (the peer unreachable, or the
// cancellations dropped) lets the next one be queued.
func TestDroppedRequestMakesRoomForTheNext(t *testing.T) {
	r, l, _, _ := newSender(t)
	w, q := &l.ctl.w, l.ctl.q
	l.resetQueued.Store(true)
	q.pushBelow(lossTo, "", resetBody{}, 1, false, q.max)
	w.batch = q.takeBatch(w.batch[:0])
	for i := range w.batch {
		w.later.fail(l, &w.batch[i], ErrUnreachable)
	}
	l.perform(&w.later)
	if l.resetQueued.Load() {
		t.Fatal("a request handed back still blocks the next")
	}
	if st := r.Stats(); st.Undeliverable != 0 {
		t.Fatalf("%d loss messages handed back to the actor system", st.Undeliverable)
	}
	l.resetQueued.Store(true)
	w.undo = append(w.undo, outMsg{to: lossTo, msg: resetBody{}, corr: 2})
	w.dropUndo("test")
	if l.resetQueued.Load() {
		t.Fatal("a request dropped with the cancellations still blocks the next")
	}
}

// A declaration this node asked for and waited for in vain is presumed:
// the peer is taken down, but no number of the peer's is made up for it,
// so the peer's next real declaration, whatever its number, is still
// acted on (a made-up number swallowed it, and its loss went without a
// Down).
func TestPresumedLossSwallowsNoDeclaration(t *testing.T) {
	_, r, _ := testRouterTimed(t, timings{lossWait: 50 * time.Millisecond})
	p := testhost.NewPeerID(t)
	r.mu.Lock()
	r.peers.peers[p] = &peerState{known: true, inc: 1,
		heard: 5, acted: 5, // its declaration 5 was acted on
		want: 6, // and a reset here asked for another (askLoss)
	}
	r.mu.Unlock()
	r.awaitLoss(p, nil, 0) // the peer sent nothing since 5: it does not declare
	if st := r.Stats(); st.LossesHeard != 1 {
		t.Fatalf("after the wait: %d losses acted on, want 1 (presumed)", st.LossesHeard)
	}
	r.lossHeard(p, 6, 0) // the peer's next real declaration
	if st := r.Stats(); st.LossesHeard != 2 {
		t.Fatalf("the peer's declaration 6 after a presumed one: %d losses acted on, want 2", st.LossesHeard)
	}
	r.lossHeard(p, 6, 0) // the same again: once
	if st := r.Stats(); st.LossesHeard != 2 {
		t.Fatalf("declaration 6 acted on twice: %d", st.LossesHeard)
	}
}

// A stream beyond maxInboundStreams of a peer is reset at once, and the
// peer is asked to declare the loss of what it wrote on it, as for any
// stream a reader gives up.
func TestRefusedStreamAsksForADeclaration(t *testing.T) {
	f := newLossFixture(t)
	for range maxInboundStreams { // with f.user's, one more than the limit
		// No hello (which would end the older streams, see supersede):
		// the start of a frame length, and nothing more. Whichever the
		// router takes last is refused.
		if _, err := f.user.another(f.hB).s.Write([]byte{0x80}); err != nil {
			t.Fatal(err)
		}
	}
	for typ := ""; typ != typeReset; {
		typ = recvWithin(t, f.ctx, f.ctlTypes) // the router's hello, then the request
	}
	if st := f.rB.Stats(); st.StreamsReset != 1 {
		t.Fatalf("%d streams reset, want 1", st.StreamsReset)
	}
}
