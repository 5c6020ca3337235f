package routing

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// What a writer hands back when it cannot send: refused messages, a
// broken stream's batch, and the signals it sends again instead.

// A queued message refused by the writer (too large for the frame limit)
// fails its Ask at once: the Undeliverable answer reaches the asker, whose
// Ref the writer rebuilds from the name its queue element kept.
func TestWriterFailsRefusedAsk(t *testing.T) {
	r, l, sys, to := newSender(t)
	if l.user.q.takeBatch(nil) != nil { // the writer sleeps: a push wakes it
		t.Fatal("a batch from an empty queue")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := sys.Ask(ctx, to, benchBlob{Data: make([]byte, 1000)})
		done <- result{v, err}
	}()
	var batch []outMsg
	for len(batch) == 0 { // the Ask queues its request
		select {
		case res := <-done:
			t.Fatalf("Ask returned %v, %v before its request was written", res.v, res.err)
		case <-l.user.q.ready:
		}
		batch = l.user.q.takeBatch(nil)
	}
	w := &l.user.w
	w.fw, w.batch = codec.NewFrameWriter(io.Discard, 512), batch
	if err := w.put(); err != nil {
		t.Fatal(err)
	}
	l.perform(&w.later)
	if res := <-done; !errors.Is(res.err, ErrTooLarge) {
		t.Fatalf("Ask = %v, %v; want an error wrapping ErrTooLarge", res.v, res.err)
	}
	if st := r.Stats(); st.TooLarge != 1 || st.Undeliverable != 1 || st.Sent != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// When a stream breaks, each message the writer had in hand is handed back
// exactly once: a large message in fragments and those held behind it
// (moved out of the batch), and a message refused before the break (it
// was handed back then). A monitor request handed back is cancelled at the
// peer with a demonitor, since it may have arrived.
func TestBrokenStreamHandsBackEachMessageOnce(t *testing.T) {
	r, l, sys, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil { // fragments, signals
		t.Fatal(err)
	}
	msg := func(to string, size int) outMsg {
		return outMsg{to: to, from: "source", msg: benchBlob{Data: make([]byte, size)}}
	}
	for _, tc := range []struct {
		name  string
		batch []outMsg
		want  uint64 // handed back in all, by the refusal and the break
	}{
		{"large and held", []outMsg{msg("sink", 100<<10), msg("sink", 10), msg("sink", 10)}, 3},
		{"refused before the break", []outMsg{msg("sink", codec.DefaultMaxFrame+1), msg("sink", 10)}, 2},
		{"large, then another pair", []outMsg{msg("sink", 100<<10), msg("other", 10)}, 2},
		{"monitor", []outMsg{{to: "sink", from: "source", msg: transport.MonitorSignal{ID: 7}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, lettersBefore := r.undeliverable.Load(), sys.DeadLetters()
			_, signal := tc.batch[0].msg.(transport.MonitorSignal)
			lg := new(largeOut) // a user stream; a control stream has none
			if signal {
				lg = nil
			}
			w := &l.user.w
			if signal {
				w = &l.ctl.w
			}
			w.fw = codec.NewFrameWriter(io.Discard, r.cfg.MaxFrame, codec.WithCompact(true))
			w.batch, w.lg = tc.batch, lg
			if err := w.put(); err != nil {
				t.Fatal(err)
			}
			w.broken(errors.New("stream reset"))
			l.perform(&w.later)
			if got := r.undeliverable.Load() - before; got != tc.want {
				t.Fatalf("%d messages handed back, want %d", got, tc.want)
			}
			users := tc.want
			if signal {
				users = 0
				if len(w.undo) != 1 || w.undo[0].msg != (transport.DemonitorSignal{ID: 7}) || w.undo[0].to != "sink" || w.undo[0].from != "source" {
					t.Fatalf("kept after the break: %+v, want one demonitor of ID 7", w.undo)
				}
				w.undo = nil
			}
			if got := sys.DeadLetters() - lettersBefore; got != users {
				t.Fatalf("%d dead letters, want %d", got, users)
			}
		})
	}
}

// A Down whose control stream broke is sent again on a new one: the peer's
// connection stays up, so nothing else would fire its monitor. (Handed
// back, as other messages are, it was lost: the actor system has nothing
// to do with a Down for another peer.)
func TestDownOnABrokenStreamIsSentAgain(t *testing.T) {
	hA, _, sysA := testRouter(t, 0)
	hB, _, sysB := testRouter(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hB.Connect(ctx, libp2ppeer.AddrInfo{ID: hA.ID(), Addrs: hA.Addrs()}); err != nil {
		t.Fatal(err)
	}
	// target, on A, monitors whoever greets it, which opens A's control
	// stream to B, and stops when told.
	target, err := sysA.Spawn("target", func(c *actor.Context) {
		c.Receive(actor.On(func(string) {
			c.Monitor(c.Sender())
			c.Reply("hi")
			c.Receive(actor.On(func(string) { c.Stop() }))
		}))
	})
	if err != nil {
		t.Fatal(err)
	}
	downs := make(chan actor.Down, 1)
	greeted := make(chan error, 1)
	if _, err := sysB.Spawn("watcher", func(c *actor.Context) {
		c.Monitor(target)
		c.Ask(target, "hello", 5*time.Second, func(_ any, err error) {
			greeted <- err
			c.Receive(actor.On(func(d actor.Down) { downs <- d }))
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := recvWithin(t, ctx, greeted); err != nil {
		t.Fatal(err)
	}
	ctlStream := func(h host.Host, to libp2ppeer.ID, dir network.Direction) network.Stream {
		for _, c := range h.Network().ConnsToPeer(to) {
			for _, s := range c.GetStreams() {
				if s.Protocol() == ProtoCtl && s.Stat().Direction == dir {
					return s
				}
			}
		}
		return nil
	}
	var out, in network.Stream
	for tick := time.NewTicker(5 * time.Millisecond); out == nil || in == nil; {
		out, in = ctlStream(hA, hB.ID(), network.DirOutbound), ctlStream(hB, hA.ID(), network.DirInbound)
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("no control stream from A to B")
		}
	}
	// B resets it; A sees it (a read fails), and the Down of target is
	// written on it.
	seen := make(chan error, 1)
	go func() { _, err := out.Read(make([]byte, 1)); seen <- err }()
	_ = in.Reset()
	if err := recvWithin(t, ctx, seen); err == nil {
		t.Fatal("A read from its control stream")
	}
	sysA.Send(target, "stop")
	select {
	case d := <-downs:
		if d.Ref != target {
			t.Fatalf("down %+v", d)
		}
	case <-ctx.Done():
		t.Fatal("no Down after the control stream broke")
	}
}
