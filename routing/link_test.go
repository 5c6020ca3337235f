package routing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

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
		{"monitor", []outMsg{{to: "sink", from: "source", msg: actor.MonitorSignal{ID: 7}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, lettersBefore := r.undeliverable.Load(), sys.DeadLetters()
			_, signal := tc.batch[0].msg.(actor.MonitorSignal)
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
				if len(w.undo) != 1 || w.undo[0].msg != (actor.DemonitorSignal{ID: 7}) || w.undo[0].to != "sink" || w.undo[0].from != "source" {
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
	w.batch = append(w.batch[:0], outMsg{to: "sink", from: "source", msg: actor.MonitorSignal{ID: 7}})
	// Queued while the stream was breaking, after the batch in hand.
	if !l.ctl.q.pushBelow("sink", "source", actor.MonitorSignal{ID: 8}, 0, false, l.ctl.q.max) {
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
	wantMessages(t, r, &wire, actor.DemonitorSignal{ID: 7}, actor.MonitorSignal{ID: 8})
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
	wantMessages(t, r, &wire, actor.DemonitorSignal{ID: 7}, actor.MonitorSignal{ID: 8}, actor.MonitorSignal{ID: 9})
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

// A caller writing through leaves the writer awake when work is left (the
// cancellations of a stream that broke under it) and asleep otherwise, so
// that the next push wakes it.
func TestWriteThroughLeavesTheWriterAsNeeded(t *testing.T) {
	r, l, _, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil {
		t.Fatal(err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	w, q := &l.ctl.w, l.ctl.q
	claim := func(id actor.MonitorID) {
		t.Helper()
		if q.takeBatch(nil) != nil { // the writer finds the queue empty
			t.Fatal("a batch from an empty queue")
		}
		if ok, claimed := q.pushClaim("sink", "source", actor.MonitorSignal{ID: id}, 0, false); !ok || !claimed {
			t.Fatalf("push: queued %v, claimed %v; want both", ok, claimed)
		}
	}
	woken := func() bool {
		select {
		case <-q.ready:
			return true
		default:
			return false
		}
	}
	w.use(&fakeStream{err: network.ErrReset})
	claim(7)
	w.writeThrough(time.Time{})
	if !woken() || len(w.undo) != 1 || w.s != nil {
		t.Fatalf("after a write-through broke: undo %+v, stream %v; the writer must be woken", w.undo, w.s)
	}
	var wire bytes.Buffer
	w.use(&fakeStream{w: &wire})
	claim(8)
	w.writeThrough(time.Time{})
	if woken() || len(w.undo) != 0 {
		t.Fatalf("after a write-through with nothing left: undo %+v, woken", w.undo)
	}
	wantMessages(t, r, &wire, actor.DemonitorSignal{ID: 7}, actor.MonitorSignal{ID: 8})
	if !q.pushBelow("sink", "source", actor.MonitorSignal{ID: 9}, 0, false, q.max) || !woken() {
		t.Fatal("the next push did not wake the writer")
	}
	if st := r.Stats(); st.WrittenThrough != 1 {
		t.Fatalf("written through: %d, want 1 (the write that broke does not count)", st.WrittenThrough)
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
	w := &l.ctl.w
	w.mu.Lock()
	w.undo = append(w.undo, outMsg{to: "x", from: "y", msg: actor.DemonitorSignal{ID: 1}})
	w.mu.Unlock()
	l.ctl.q.wakeIfQueued(true) // as after a write-through whose stream broke
	select {
	case <-dropped: // three dials, about 0.3 s
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellations were neither sent nor dropped within 10 s")
	}
	// Whenever the writer lets go of mu next (it sleeps, or dials
	// again), it keeps none: it does not redial for them.
	locked := make(chan struct{})
	go func() { w.mu.Lock(); close(locked) }()
	select {
	case <-locked:
		left := len(w.undo)
		w.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d cancellations still kept", left)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not go to sleep after giving up")
	}
}

// A write deadline left on a stream that has expired since (that of an Ask
// written through, or the writer's own after the link idled for longer
// than writeTimeout) does not break the next batch: the FrameWriter
// flushes on its own while a batch of more than its buffer is put, and it
// did so under the old deadline, which failed a healthy stream and gave
// up the whole batch.
func TestExpiredDeadlineBreaksNoBatch(t *testing.T) {
	hA, rA, sysA := testRouter(t, 0)
	hB, _, sysB := testRouter(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hA.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	const batch = 64 // of 8 KiB: well over the FrameWriter's buffer
	counted := make(chan int, batch+1)
	if _, err := sysB.Spawn("count", func(c *actor.Context) {
		n := 0
		var h actor.Case
		h = actor.On(func(s string) {
			if s == "ping" {
				c.Reply("pong")
			} else {
				n++
				counted <- n
			}
			c.Receive(h)
		})
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	to, _ := actor.NewRef(hB.ID().String(), "count")
	sysA.Send(to, "warm") // opens the stream
	select {
	case <-counted:
	case <-ctx.Done():
		t.Fatal("the first message did not arrive")
	}
	// Asks until one is written through (the writer asleep with its
	// stream), with a deadline that then passes.
	for rA.Stats().WrittenThrough == 0 {
		askCtx, askCancel := context.WithTimeout(ctx, minWriteThrough+100*time.Millisecond)
		if _, err := sysA.Ask(askCtx, to, "ping"); err != nil {
			t.Fatal(err)
		}
		<-askCtx.Done() // the stream's write deadline has passed
		askCancel()
	}
	from, _ := actor.NewRef(sysA.Peer(), "sender")
	msgs := make([]actor.Outbound, batch)
	for i := range msgs {
		msgs[i] = actor.Outbound{To: to, Msg: strings.Repeat("x", 8<<10)}
	}
	if n, err := rA.DeliverBatch(from, msgs); err != nil || n != batch {
		t.Fatalf("DeliverBatch: %d, %v", n, err)
	}
	for n := 0; n < batch+1; {
		select {
		case n = <-counted:
		case <-ctx.Done():
			t.Fatalf("%d of %d messages arrived; %d undeliverable", n-1, batch, rA.Stats().Undeliverable)
		}
	}
	if u := rA.Stats().Undeliverable; u != 0 {
		t.Fatalf("%d messages undeliverable", u)
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
