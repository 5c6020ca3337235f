package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// A user stream whose hello says its writer declared a loss hands nothing
// on before the control stream's declaration was acted on: the actor that
// monitors the writer's actor sees the Down before any message sent after
// the loss, even when the control stream lags.
func TestUserStreamWaitsForTheDeclaredLoss(t *testing.T) {
	f := newLossFixture(t)
	if typ := recvWithin(t, f.ctx, f.ctlTypes); typ != typeHello {
		t.Fatalf("on the router's control stream: %q, want its hello", typ)
	}
	next := f.nextStream(t, 1) // A declared loss 1: its user stream broke
	f.ctl.send(codec.KindSystem, typeLost, lostBody{Session: 1})
	wantEvents(t, f.ctx, f.events, "down: true", "after")
	// Declared again (a copy sent on a new stream): nothing more.
	f.ctl.send(codec.KindSystem, typeLost, lostBody{Session: 1})
	next.send(codec.KindUser, "string", "end")
	wantEvents(t, f.ctx, f.events, "end")
	if st := f.rB.Stats(); st.LossesHeard != 1 || st.LossesDeclared != 0 {
		t.Fatalf("losses heard %d, declared %d; want 1 and 0", st.LossesHeard, st.LossesDeclared)
	}
}

// A reader that resets a stream it cannot read (here: an oversize frame)
// asks its writer to declare the loss, and the writer's next user stream
// waits for the declaration, even with a hello that announces none.
func TestReaderResetAsksTheWriterToDeclare(t *testing.T) {
	f := newLossFixture(t)
	if _, err := f.user.s.Write([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); err != nil { // a 4 GiB frame
		t.Fatal(err)
	}
	if !f.user.reset() {
		t.Fatal("the stream with an oversize frame was not reset")
	}
	for typ := ""; typ != typeReset; {
		typ = recvWithin(t, f.ctx, f.ctlTypes) // the router's hello, its monitor, then the request
	}
	f.nextStream(t, 0)
	f.ctl.send(codec.KindSystem, typeLost, lostBody{Session: 4})
	wantEvents(t, f.ctx, f.events, "down: true", "after")
	if st := f.rB.Stats(); st.LossesHeard != 1 || st.StreamsReset != 1 {
		t.Fatalf("losses heard %d, streams reset %d; want 1 and 1", st.LossesHeard, st.StreamsReset)
	}
}

// A declaration that does not come (an older peer) holds a reader for
// lossWait at most: it then takes the peer down itself and goes on.
func TestAwaitedLossThatNeverComes(t *testing.T) {
	f := newLossFixtureTimed(t, timings{lossWait: 200 * time.Millisecond})
	f.nextStream(t, 3)
	wantEvents(t, f.ctx, f.events, "down: true", "after")
	if st := f.rB.Stats(); st.LossesHeard != 1 {
		t.Fatalf("losses heard %d, want 1", st.LossesHeard)
	}
}

// A writer whose own stream breaks under it while the connection lives
// (here: reset on this side) declares the loss: the peer's actors are down
// here (a monitor fires), this node's are down there, before the first
// message of the next stream, and traffic goes on.
func TestWriterDeclaresTheLossOfItsStream(t *testing.T) {
	hA, rA, sysA := testRouter(t, 0)
	hB, rB, sysB := testRouter(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hA.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	downsA := make(chan string, 4)
	sink, _ := actor.NewRef(hB.ID().String(), "sink")
	src, _ := actor.NewRef(hA.ID().String(), "src")
	events := make(chan string, 16)
	lossSink(t, sysB, src, events) // before src monitors it
	_, err := sysA.Spawn("src", func(c *actor.Context) {
		c.Monitor(sink)
		var h actor.Case
		h = actor.On(func(d actor.Down) {
			downsA <- fmt.Sprintf("down: %v", errors.Is(d.Reason, actor.ErrNodeDown))
			c.Receive(h)
		})
		c.Receive(h)
	})
	if err != nil {
		t.Fatal(err)
	}
	sysA.Send(sink, "watch")
	wantEvents(t, ctx, events, "watching")

	resetUserStream(t, rA, hB.ID())
	sysA.Send(sink, "lost") // the write that finds the stream broken: handed back
	if d := recvWithin(t, ctx, downsA); d != "down: true" {
		t.Fatalf("on the writer's side: %q, want a Down for the node", d)
	}
	sysA.Send(sink, "after")
	wantEvents(t, ctx, events, "down: true", "after")
	if a, b := rA.Stats(), rB.Stats(); a.LossesDeclared != 1 || b.LossesHeard != 1 || a.LossesHeard != 0 || b.LossesDeclared != 0 {
		t.Fatalf("writer declared %d, heard %d; reader declared %d, heard %d; want 1, 0, 0, 1",
			a.LossesDeclared, a.LossesHeard, b.LossesDeclared, b.LossesHeard)
	}
}

// Under load, a user stream reset on the writer's side loses what the
// reader had not read, but never in silence: the receiving actor sees a
// Down for the sender's node before the first message after any gap (the
// old stream's reader may still hand on what it read after that Down:
// see loss.go), and the messages sent afterwards arrive, in order.
func TestStreamResetUnderLoadIsNeverSilent(t *testing.T) {
	hA, rA, sysA := testRouter(t, 0)
	hB, rB, sysB := testRouter(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := hA.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	const total = 100_000
	type report struct {
		got, gaps, silent, downs int
		first                    string // the first silent gap
	}
	done := make(chan report, 1)
	progress := make(chan int, 1)
	sink, _ := actor.NewRef(hB.ID().String(), "sink")
	src, _ := actor.NewRef(hA.ID().String(), "src")
	if _, err := sysB.Spawn("sink", func(c *actor.Context) {
		c.Monitor(src)
		var rep report
		last, downs := -1, 0 // downs: not yet matched with a gap
		var h []actor.Case
		h = []actor.Case{
			actor.On(func(n int) {
				if n != last+1 && (downs == 0 || n <= last) { // n <= last: a duplicate or a reordering
					rep.silent++
					if rep.first == "" {
						rep.first = fmt.Sprintf("%d after %d, %d Downs before", n, last, rep.downs)
					}
				}
				if n != last+1 {
					rep.gaps++
					downs = 0
				}
				last = n
				rep.got++
				if n == total-1 {
					done <- rep
					return
				}
				c.Receive(h...)
			}),
			actor.On(func(d actor.Down) {
				if errors.Is(d.Reason, actor.ErrNodeDown) {
					rep.downs++
					downs++
					c.Monitor(src) // watch the node's next life
				}
				c.Receive(h...)
			}),
		}
		c.Receive(h...)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := sysA.Spawn("src", func(c *actor.Context) { c.Receive(actor.On(func(string) {})) }); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	resume := make(chan struct{})
	go func() { // plain code, waiting for room in the link's queue
		for i := range total {
			if i == total/2 { // the writer writes again after the reset
				progress <- i
				<-resume
			}
			if err := rA.DeliverCtx(ctx, transport.Envelope{To: sink, From: src, Msg: i}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	recvWithin(t, ctx, progress)
	resetUserStream(t, rA, hB.ID())
	close(resume)
	if err := recvWithin(t, ctx, sent); err != nil {
		t.Fatal(err)
	}
	rep := recvWithin(t, ctx, done)
	a, b := rA.Stats(), rB.Stats()
	t.Logf("%d of %d arrived, %d gaps, %d Downs; declared %d, heard %d; undeliverable at the sender %d",
		rep.got, total, rep.gaps, rep.downs, a.LossesDeclared, b.LossesHeard, a.Undeliverable)
	if rep.silent != 0 || rep.gaps == 0 {
		t.Fatalf("%d gaps, %d of them or reorderings without a Down before them (first: %s); want some gaps (the batch that found the stream broken), none silent", rep.gaps, rep.silent, rep.first)
	}
	if a.LossesDeclared != 1 || b.LossesHeard != 1 || rep.downs != 1 {
		t.Fatalf("declared %d, heard %d, Downs %d; want 1 each", a.LossesDeclared, b.LossesHeard, rep.downs)
	}
}

// A control writer whose own stream breaks declares the loss ahead of
// everything it still has to send: what was queued while its write hung
// was sent after the loss, and must reach the peer after its Down.
func TestControlWriterDeclaresFirst(t *testing.T) {
	r, l, _, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil {
		t.Fatal(err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	r.peers = newPeerTable(network.Conn.IsClosed)
	w, q := &l.ctl.w, l.ctl.q
	w.use(&fakeStream{err: &network.StreamError{Remote: false}}) // reset here
	w.batch = append(w.batch[:0], outMsg{to: "sink", from: "source", msg: transport.DownSignal{ID: 1}})
	q.pushBelow("sink", "source", transport.MonitorSignal{ID: 2}, 0, false, q.max) // queued meanwhile
	if err := w.send(time.Time{}); err == nil {
		t.Fatal("a broken stream took a flush")
	}
	l.perform(&w.later)
	if st := r.Stats(); st.LossesDeclared != 1 {
		t.Fatalf("%d losses declared, want 1", st.LossesDeclared)
	}
	var wire bytes.Buffer
	w.use(&fakeStream{w: &wire})
	w.batch = q.takeBatch(w.batch[:0])
	if err := w.send(time.Time{}); err != nil {
		t.Fatal(err)
	}
	wantMessages(t, r, &wire, lostBody{Session: 1}, transport.DownSignal{ID: 1}, transport.MonitorSignal{ID: 2})
}
