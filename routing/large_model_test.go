package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// largeMsg is a test message: a sequence number and padding of a chosen
// length, every byte of it byte(Seq).
type largeMsg struct {
	Seq int    `cbor:"1,keyasint"`
	Pad []byte `cbor:"2,keyasint"`
}

// arrival is a largeMsg as a target actor got it.
type arrival struct {
	from, to string
	seq      int
	intact   bool
}

// loopback is a router and actor system without a network: a test writes
// with a writer's planner (memWriter) into memory and reads that with the router's inbound
// read loop, so every interleaving of batches is reproducible.
type loopback struct {
	h   host.Host
	r   *Router
	sys *actor.System
	reg *codec.Registry
	got chan arrival
}

// newLoopback starts a router (maximum frame maxFrame) and actors
// "t0".."t2" that report every largeMsg they get on lb.got.
func newLoopback(tb testing.TB, maxFrame int) *loopback {
	tb.Helper()
	h := testhost.NewHost(tb, libp2p.NoListenAddrs)
	reg, err := codec.NewRegistry()
	if err != nil {
		tb.Fatal(err)
	}
	codec.MustRegister[largeMsg](reg, "test.large")
	logger := testutil.QuietLogger()
	r, err := newRouter(config{Host: h, Registry: reg, Logger: logger, MaxFrame: maxFrame})
	if err != nil {
		tb.Fatal(err)
	}
	sys, err := actor.New(actor.WithPeer(h.ID().String()), actor.WithRemote(r), actor.WithLogger(logger), actor.WithWatchdog(0))
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Bind(sys); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
		_ = r.Close(ctx) // then NewHost's cleanup closes h
	})
	lb := &loopback{h: h, r: r, sys: sys, reg: reg, got: make(chan arrival, 1<<14)}
	for i := range 3 {
		name := fmt.Sprint("t", i)
		if _, err := sys.Spawn(name, func(c *actor.Context) {
			var h actor.Case
			h = actor.On(func(m largeMsg) {
				ok := true
				for _, b := range m.Pad {
					ok = ok && b == byte(m.Seq)
				}
				lb.got <- arrival{from: c.Sender().Name(), to: name, seq: m.Seq, intact: ok}
				c.Receive(h)
			})
			c.Receive(h)
		}); err != nil {
			tb.Fatal(err)
		}
	}
	return lb
}

// msg returns an envelope from actor from to actor to whose body is
// bodyLen bytes long.
func (lb *loopback) msg(tb testing.TB, from, to string, seq, bodyLen int) outMsg {
	tb.Helper()
	pad := bodyLen
	for range 8 {
		m := largeMsg{Seq: seq, Pad: bytes.Repeat([]byte{byte(seq)}, pad)}
		_, body, err := lb.reg.Encode(m)
		if err != nil {
			tb.Fatal(err)
		}
		if len(body) == bodyLen {
			return outMsg{to: to, from: from, msg: m}
		}
		if pad -= len(body) - bodyLen; pad < 0 {
			break
		}
	}
	tb.Fatalf("no message %d of %d bytes", seq, bodyLen)
	return outMsg{}
}

// read runs the inbound read loop over stream, as a 1.1.0 stream.
func (lb *loopback) read(stream []byte) error {
	in := inbound{r: lb.r, remote: lb.h.ID(), remoteStr: lb.h.ID().String(), out: lb.sys.Port().NewInbound(), v11: true}
	defer in.out.Close()
	return in.read(codec.NewFrameReader(bytes.NewReader(stream), lb.r.cfg.MaxFrame, codec.WithCompact(true)))
}

// collect waits for n arrivals.
func (lb *loopback) collect(tb testing.TB, n int) []arrival {
	tb.Helper()
	out := make([]arrival, 0, n)
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case a := <-lb.got:
			out = append(out, a)
		case <-timeout:
			tb.Fatalf("%d of %d messages arrived", len(out), n)
		}
	}
	select {
	case a := <-lb.got:
		tb.Fatalf("more messages than the %d expected: %+v", n, a)
	default:
	}
	return out
}

// memWriter is a writer's batch planner writing into memory, called as
// writer.send calls it: putBatch for each batch taken from the queue,
// and idleFragment when the queue was empty after it.
type memWriter struct {
	p   planner
	lg  largeOut
	buf bytes.Buffer
	fw  *codec.FrameWriter
	planned
}

func (lb *loopback) writer() *memWriter {
	w := &memWriter{p: newPlanner(lb.r.cfg)}
	w.fw = codec.NewFrameWriter(&w.buf, lb.r.cfg.MaxFrame, codec.WithCompact(true))
	return w
}

// batch writes one batch; idle says that the queue was empty after it.
// Every message the planner refuses must be too large.
func (w *memWriter) batch(tb testing.TB, b []outMsg, idle bool) {
	tb.Helper()
	b = slices.Clone(b) // a writer owns the batch it takes, and marks moved messages in it
	err := w.p.putBatch(w.fw, b, true, &w.lg)
	if err == nil && idle && w.lg.active {
		err = w.p.idleFragment(w.fw, &w.lg)
	}
	if err != nil {
		tb.Fatalf("writing: %v", err)
	}
	d := &w.p.done
	for _, f := range d.failed {
		if !errors.Is(f.reason, ErrTooLarge) || f.m.to == "" {
			tb.Fatalf("message %+v refused: %v", f.m, f.reason)
		}
	}
	w.sent += d.sent
	w.tooLarge += d.tooLarge
	w.encodeErrors += d.encodeErrors
	w.failed = append(w.failed, d.failed...)
	w.p.done = planned{}
}

// finish writes the rest of the large messages, as a writer with an
// empty queue does, and returns the bytes written.
func (w *memWriter) finish(tb testing.TB) []byte {
	tb.Helper()
	for w.lg.active {
		w.batch(tb, nil, true)
	}
	if err := w.fw.Flush(); err != nil {
		tb.Fatal(err)
	}
	return w.buf.Bytes()
}

// fragmentsIn counts the fragments in a stream of frames.
func fragmentsIn(tb testing.TB, stream []byte) int {
	tb.Helper()
	fr := codec.NewFrameReader(bytes.NewReader(stream), 0, codec.WithCompact(true))
	reg, err := codec.NewRegistry()
	if err != nil {
		tb.Fatal(err)
	}
	if err := registerWire(reg); err != nil {
		tb.Fatal(err)
	}
	n := 0
	for {
		var env codec.Envelope
		err := fr.ReadEnvelope(&env)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			tb.Fatal(err)
		}
		if env.Kind == codec.KindSystem && env.Type == typeFragment {
			n++
		}
	}
}

// checkOrder checks that got holds exactly the messages of sent that were
// not refused, intact, each pair's in the order sent.
func checkOrder(tb testing.TB, sent []outMsg, refused map[int]bool, got []arrival) {
	tb.Helper()
	type pr struct{ from, to string }
	want := map[pr][]int{}
	for _, e := range sent {
		if m := e.msg.(largeMsg); !refused[m.Seq] {
			k := pr{e.from, e.to}
			want[k] = append(want[k], m.Seq)
		}
	}
	for _, a := range got {
		k := pr{a.from, a.to}
		switch {
		case !a.intact:
			tb.Fatalf("message %d from %s to %s arrived corrupt", a.seq, a.from, a.to)
		case len(want[k]) == 0:
			tb.Fatalf("message %d from %s to %s was not expected", a.seq, a.from, a.to)
		case want[k][0] != a.seq:
			tb.Fatalf("from %s to %s: message %d arrived when %d was due", a.from, a.to, a.seq, want[k][0])
		}
		want[k] = want[k][1:]
	}
}

// TestFragmentInterleavings: random mixes of small and large messages
// (at and around the thresholds) of several pairs, cut into random
// batches with the queue found empty at random points, arrive complete,
// intact and in per-pair order; each is counted once as sent and
// received, and those above the maximum frame are refused.
func TestFragmentInterleavings(t *testing.T) {
	const maxFrame = 300 << 10
	lb := newLoopback(t, maxFrame)
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	sizes := []int{40, 500, fragmentData - 1, fragmentData, fragmentData + 1, 2*fragmentData + 7, maxFrame, maxFrame + 1}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		var sent []outMsg
		refused := map[int]bool{}
		for i := range 10 + rng.IntN(40) {
			size := sizes[rng.IntN(len(sizes))]
			if rng.IntN(4) == 0 {
				size = 20 + rng.IntN(maxFrame)
			}
			if size > maxFrame {
				refused[i] = true
			}
			sent = append(sent, lb.msg(t, fmt.Sprint("s", rng.IntN(3)), fmt.Sprint("t", rng.IntN(3)), i, size))
		}
		before := lb.r.Stats()
		w := lb.writer()
		for rest := sent; len(rest) > 0; {
			n := 1 + rng.IntN(min(len(rest), 8))
			w.batch(t, rest[:n], rng.IntN(3) == 0)
			rest = rest[n:]
			if held := len(w.lg.held); held > maxHeld {
				t.Fatalf("seed %d: %d messages held", seed, held)
			}
		}
		if err := lb.read(w.finish(t)); err != nil {
			t.Fatalf("seed %d: reading: %v", seed, err)
		}
		checkOrder(t, sent, refused, lb.collect(t, len(sent)-len(refused)))
		after := lb.r.Stats()
		if want := uint64(len(sent) - len(refused)); w.sent != want || after.Received-before.Received != want {
			t.Fatalf("seed %d: %d sent and %d received, want %d", seed, w.sent, after.Received-before.Received, want)
		}
		if w.tooLarge != uint64(len(refused)) || len(w.failed) != len(refused) || w.encodeErrors != 0 || after.DecodeErrors != before.DecodeErrors {
			t.Fatalf("seed %d: %d refused as too large (%d failed), want %d; stats %+v", seed, w.tooLarge, len(w.failed), len(refused), after)
		}
		for _, f := range w.failed {
			if m := f.m.msg.(largeMsg); !refused[m.Seq] {
				t.Fatalf("seed %d: message %d refused", seed, m.Seq)
			}
		}
	}
}

// TestFragmentThresholds: a body of exactly fragmentData bytes goes whole,
// one byte more in two fragments; a body of exactly the maximum frame in
// fragments, one byte more is refused.
func TestFragmentThresholds(t *testing.T) {
	const maxFrame = 256 << 10
	lb := newLoopback(t, maxFrame)
	for _, c := range []struct {
		size, fragments int
		refused         bool
	}{
		{fragmentData, 0, false},
		{fragmentData + 1, 2, false},
		{maxFrame, (maxFrame + fragmentData - 1) / fragmentData, false},
		{maxFrame + 1, 0, true},
	} {
		w := lb.writer()
		e := lb.msg(t, "s0", "t0", 1, c.size)
		w.batch(t, []outMsg{e}, true)
		stream := w.finish(t)
		if n := fragmentsIn(t, stream); n != c.fragments {
			t.Errorf("%d bytes: %d fragments, want %d", c.size, n, c.fragments)
		}
		if err := lb.read(stream); err != nil {
			t.Fatal(err)
		}
		refused := map[int]bool{1: c.refused}
		n := 1
		if c.refused {
			n = 0
		}
		checkOrder(t, []outMsg{e}, refused, lb.collect(t, n))
		if (w.tooLarge == 1) != c.refused || len(w.failed) != int(w.tooLarge) || w.sent != uint64(n) {
			t.Errorf("%d bytes: %d refused, %d sent", c.size, w.tooLarge, w.sent)
		}
	}
}

// TestFragmentsUnderSmallMaxFrame: with a maximum frame just above
// fragmentData, a message that needs fragments still goes (its fragments
// are smaller): a fragment of fragmentData bytes would not fit a frame,
// and the writer broke the stream.
func TestFragmentsUnderSmallMaxFrame(t *testing.T) {
	const maxFrame = fragmentData + 16
	lb := newLoopback(t, maxFrame)
	w := lb.writer()
	sent := []outMsg{lb.msg(t, "s0", "t0", 1, fragmentData+8), lb.msg(t, "s0", "t0", 2, maxFrame)}
	w.batch(t, sent, true)
	if err := lb.read(w.finish(t)); err != nil {
		t.Fatal(err)
	}
	checkOrder(t, sent, nil, lb.collect(t, 2))
}

// TestHeldMessagesBounded: while a large message goes out, a sender keeps
// the queue busy with messages of the same pair. The writer holds at most
// maxHeld of them: then it finishes the large message, and everything
// arrives in order.
func TestHeldMessagesBounded(t *testing.T) {
	lb := newLoopback(t, 0)
	w := lb.writer()
	sent := []outMsg{lb.msg(t, "s0", "t0", 0, 1000<<10)}
	w.batch(t, sent, false)
	done := false
	for b := range 3 * maxHeld / 100 {
		batch := make([]outMsg, 100)
		for i := range batch {
			batch[i] = lb.msg(t, "s0", "t0", 1+b*100+i, 60)
		}
		sent = append(sent, batch...)
		w.batch(t, batch, false) // the queue never empties
		if len(w.lg.held) > maxHeld {
			t.Fatalf("%d messages held", len(w.lg.held))
		}
		done = done || !w.lg.active
	}
	if !done {
		t.Fatal("the large message never finished while the queue was busy")
	}
	if err := lb.read(w.finish(t)); err != nil {
		t.Fatal(err)
	}
	checkOrder(t, sent, nil, lb.collect(t, len(sent)))
}

// TestReaderBuffersWhatArrived: a first fragment that announces the
// maximum frame and brings a few bytes makes the reader hold about those
// bytes, not the maximum.
func TestReaderBuffersWhatArrived(t *testing.T) {
	lb := newLoopback(t, 0)
	in := inbound{r: lb.r, remote: lb.h.ID(), remoteStr: lb.h.ID().String(), out: lb.sys.Port().NewInbound(), v11: true}
	defer in.out.Close()
	env := codec.Envelope{Kind: codec.KindSystem, To: "t0", FromName: "s0", Type: typeFragment}
	data := make([]byte, 100)
	if err := in.fragment(&env, fragmentBody{Type: "bytes", Total: uint64(lb.r.cfg.MaxFrame), Data: data}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := in.fragment(&env, fragmentBody{Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	if got := cap(in.large.buf); got > 2*len(in.large.buf) {
		t.Fatalf("%d bytes buffered for the %d received", got, len(in.large.buf))
	}
}
