package routing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
)

// slowStream is a stream whose peer has room for room more bytes: a
// write beyond it times out, as one under a passed deadline does,
// reporting what it took whole. It signals on flushed each write that
// took all it was given.
type slowStream struct {
	fakeStream
	mu      sync.Mutex
	wire    bytes.Buffer
	room    int
	flushed chan struct{}
}

func (s *slowStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(p), s.room)
	s.room -= n
	s.wire.Write(p[:n])
	if n < len(p) {
		return n, os.ErrDeadlineExceeded
	}
	select {
	case s.flushed <- struct{}{}:
	default:
	}
	return n, nil
}

func (s *slowStream) grant(n int) {
	s.mu.Lock()
	s.room += n
	s.mu.Unlock()
}

// An Ask's deadline that passes while its request is written through (the
// peer stopped reading for a while) does not break the stream: it used to
// hand back everything else the write carried, and lose in silence what
// the peer had not read yet. What was not written waits in the stream's
// buffer, and the writer, woken, writes it once the peer reads again:
// every message arrives once, in order.
func TestWriteThroughDeadlineKeepsTheStream(t *testing.T) {
	r, l, _, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil {
		t.Fatal(err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	w, q := &l.user.w, l.user.q
	s := &slowStream{room: 300, flushed: make(chan struct{}, 1)}
	w.use(s)
	if q.takeBatch(nil) != nil { // the writer finds the queue empty
		t.Fatal("a batch from an empty queue")
	}
	const total = 50
	var want []any
	for i := range total {
		msg := fmt.Sprintf("message %d of a stalled peer's stream", i)
		want = append(want, msg)
		ok, claimed := q.pushClaim("sink", "source", msg, 0, false)
		if !ok || claimed != (i == 0) {
			t.Fatalf("push %d: queued %v, claimed %v", i, ok, claimed)
		}
	}
	w.writeThrough(time.Now().Add(5 * time.Second))
	select {
	case <-q.ready:
	default:
		t.Fatal("the write-through left frames and did not wake the writer")
	}
	if w.s != s || !w.buffered() {
		t.Fatalf("after the deadline: stream kept %v, frames buffered %v; want both", w.s == s, w.buffered())
	}
	if st := r.Stats(); st.Undeliverable != 0 || st.WrittenThrough != 0 {
		t.Fatalf("%d messages handed back, %d written through; want 0 and 0", st.Undeliverable, st.WrittenThrough)
	}
	// The peer reads again; the writer, awake, writes the rest.
	s.grant(1 << 20)
	l.wg.Add(1)
	go l.write(&l.user)
	select {
	case <-s.flushed:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not write the rest within 10 s")
	}
	r.cancel()
	l.wg.Wait()
	wantMessages(t, r, &s.wire, want...)
	if st := r.Stats(); st.Undeliverable != 0 {
		t.Fatalf("%d messages handed back", st.Undeliverable)
	}
}

// stallStream is a stream to a peer that reads nothing: a write waits
// until the write deadline, then times out.
type stallStream struct {
	fakeStream
	mu       sync.Mutex
	deadline time.Time
}

func (s *stallStream) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
	return nil
}

func (s *stallStream) Write([]byte) (int, error) {
	s.mu.Lock()
	d := s.deadline
	s.mu.Unlock()
	time.Sleep(time.Until(d)) // the stall being modelled: a real write blocks until its deadline
	return 0, os.ErrDeadlineExceeded
}

// An Ask whose request is written through to a peer that stopped reading,
// with a distant deadline, returns soon after its context is cancelled: the
// write waits maxWriteThrough at most, then leaves the rest to the writer
// (it used to wait for the deadline, as a cancellation does not reach a
// write in progress).
func TestCancelledAskLeavesAWriteThroughSoon(t *testing.T) {
	r, l, _, to := newSender(t)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	w, q := &l.user.w, l.user.q
	w.use(&stallStream{})
	q.mu.Lock()
	q.right.holder = heldByNone // the writer sleeps with its stream open
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- r.DeliverDirect(ctx, to, actor.Ref{}, "request", 7, false) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > maxWriteThrough+time.Second {
			t.Fatalf("the write-through returned %v after it started", took)
		}
	case <-time.After(maxWriteThrough + 5*time.Second):
		t.Fatal("the write-through still waits, long after its context was cancelled")
	}
	if r.Stats().WrittenThrough != 0 || !w.buffered() {
		t.Fatalf("written through %d, buffered %v: want the request left to the writer", r.Stats().WrittenThrough, w.buffered())
	}
}

// A writer between rounds (running what it left for later, say) keeps
// its writing right even with its queue empty: a push claims nothing,
// writes nothing, and leaves the message queued for the writer, which is
// at work and not idle.
func TestWriteThroughLeavesABusyWriterAlone(t *testing.T) {
	r, l, _, _ := newSender(t)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	w, q := &l.user.w, l.user.q
	var wire bytes.Buffer
	w.use(&fakeStream{w: &wire})
	if q.take(nil, false, w.s) != nil { // empty, with work in hand: the right stays
		t.Fatal("a batch from an empty queue")
	}
	if ok, claimed := q.pushClaim("sink", "source", "m", 0, false); !ok || claimed {
		t.Fatalf("push: queued %v, claimed %v; want queued, not claimed", ok, claimed)
	}
	if !q.pushBelow("sink", "source", "n", 0, false, q.max) {
		t.Fatal("second push refused")
	}
	select {
	case <-q.ready:
		t.Fatal("a writer at work was signalled")
	default:
	}
	if wire.Len() != 0 || q.len() != 2 {
		t.Fatalf("wrote %d bytes, %d queued; want 0 and 2", wire.Len(), q.len())
	}
	q.mu.Lock()
	idle, h := q.idle, q.right.holder
	q.mu.Unlock()
	if idle || h != heldByWriter {
		t.Errorf("idle %v, right held by %v; want a writer at work holding it", idle, h)
	}
}

// A caller writing through hands the right back to the writer, woken,
// when work is left (the cancellations of a stream that broke under it)
// and to nobody otherwise, the writer asleep, so that the next push
// wakes it.
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
		if ok, claimed := q.pushClaim("sink", "source", transport.MonitorSignal{ID: id}, 0, false); !ok || !claimed {
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
	wantMessages(t, r, &wire, transport.DemonitorSignal{ID: 7}, transport.MonitorSignal{ID: 8})
	if !q.pushBelow("sink", "source", transport.MonitorSignal{ID: 9}, 0, false, q.max) || !woken() {
		t.Fatal("the next push did not wake the writer")
	}
	if st := r.Stats(); st.WrittenThrough != 1 {
		t.Fatalf("written through: %d, want 1 (the write that broke does not count)", st.WrittenThrough)
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
	msgs := make([]transport.Outbound, batch)
	for i := range msgs {
		msgs[i] = transport.Outbound{To: to, Msg: strings.Repeat("x", 8<<10)}
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

// A caller that takes the writing right from the writer goroutine as it
// falls asleep owns the writer's fields from then on: its write breaking
// the stream (w.s dropped) races with nothing the sleeping writer does
// (under -race), the writer stays asleep with nothing in hand, and the
// link's drain still ends it.
func TestWriteThroughBreaksUnderASleepingWriter(t *testing.T) {
	r, l, _, _ := newSender(t)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	w, q := &l.user.w, l.user.q
	w.use(&fakeStream{err: network.ErrReset})
	l.wg.Add(1)
	go l.write(&l.user)
	claimRight(t, q)
	if !q.pushBelow("sink", "source", "m", 0, false, q.max) {
		t.Fatal("push refused")
	}
	w.writeThrough(time.Now().Add(5 * time.Second))
	q.mu.Lock()
	h, n := q.right.holder, q.n
	q.mu.Unlock()
	if h != heldByNone || n != 0 {
		t.Fatalf("after the write broke: right held by %d, %d queued; want nobody, none", h, n)
	}
	l.drain()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not end on its link's drain")
	}
}
