package routing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// The fixture of the large message tests: a writer's planner writing into
// memory, read back by the router's inbound read loop.

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
	var r *Router
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		var err error
		r, err = newRouter(config{Host: h, Registry: reg, Port: p, Logger: logger, MaxFrame: maxFrame})
		return r, nil, err
	}, actor.WithPeer(h.ID().String()), actor.WithLogger(logger), actor.WithWatchdog(0))
	if err != nil {
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
	in := inbound{r: lb.r, remote: lb.h.ID(), remoteStr: lb.h.ID().String(), out: lb.r.sys.NewInbound(), v11: true}
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
