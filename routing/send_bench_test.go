package routing

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// BenchmarkSendPath measures the sending side of one peer on one core:
// System.Send to a remote actor (into the link's queue), then, every
// chunk, what the writer goroutine does with a batch: encode it into a
// FrameWriter and flush (to io.Discard).
func BenchmarkSendPath(b *testing.B) { benchSendPath(b, 0, false) }

// BenchmarkSendPathWindowed is BenchmarkSendPath with each message a new
// 100-byte slice and 40,000 messages waiting in the queue, as with the
// window of the remote one-way benchmarks: the garbage collector runs, and
// marks what waits.
func BenchmarkSendPathWindowed(b *testing.B) { benchSendPath(b, 40_000, false) }

// BenchmarkSendPathCtx is BenchmarkSendPath with plain code's SendCtx
// (Router.DeliverCtx), which checks each message before queueing it, as
// the remote blast benchmarks send.
func BenchmarkSendPathCtx(b *testing.B) { benchSendPath(b, 0, true) }

// newSender returns a router whose link to a remote peer is not started
// (nothing dials; the caller drains the queue), bound to a system of its
// own, and the Ref of an actor "sink" on that remote peer.
func newSender(tb testing.TB) (*Router, *link, *actor.System, actor.Ref) {
	reg, err := codec.NewRegistry()
	if err != nil {
		tb.Fatal(err)
	}
	codec.MustRegister[benchBlob](reg, "bench.Blob")
	logger := testutil.QuietLogger()
	const remote = "12D3KooWRemotePeerOfTheSendingBenchmark"
	r := &Router{cfg: config{Registry: reg, Logger: logger, MaxFrame: codec.DefaultMaxFrame, LinkQueue: 64 << 10, timings: defaultTimings()},
		log: logger, links: map[string]*link{}}
	l := newLink(r, "", remote)
	r.links[remote] = l
	r.fast.Store(remote, l)
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		r.sys = p
		return r, nil, nil
	}, actor.WithPeer("12D3KooWLocalPeerOfTheSendingBenchmark"), actor.WithLogger(logger), actor.WithLoops(1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	to, err := actor.NewRef(remote, "sink")
	if err != nil {
		tb.Fatal(err)
	}
	return r, l, sys, to
}

// BenchmarkSendPathRuns is BenchmarkSendPath with the messages handed
// over in runs of 64 through DeliverBatch, as an actor's sends are.
func BenchmarkSendPathRuns(b *testing.B) {
	r, l, sys, to := newSender(b)
	var msg any = benchBlob{Data: make([]byte, 100)}
	w := &l.user.w // its goroutine asleep: the queue is drained here
	w.fw = codec.NewFrameWriter(io.Discard, 0)
	q := l.user.q
	drain := func() {
		for q.len() > 0 {
			w.batch = q.takeBatch(w.batch[:0])
			if err := w.put(); err != nil {
				b.Fatal(err)
			}
			if err := w.fw.Flush(); err != nil {
				b.Fatal(err)
			}
			clear(w.batch)
		}
	}
	from, err := actor.NewRef(sys.Peer(), "source")
	if err != nil {
		b.Fatal(err)
	}
	run := make([]transport.Outbound, 0, 64)
	b.ReportAllocs()
	i := 0
	cpu0 := testutil.ProcessCPU()
	defer func() { reportCPU(b, cpu0) }()
	for b.Loop() {
		run = append(run, transport.Outbound{To: to, Msg: msg})
		if len(run) == cap(run) {
			if n, err := r.DeliverBatch(from, run); err != nil {
				b.Fatalf("%d queued: %v", n, err)
			}
			run = run[:0]
		}
		if i++; i%chunkSize == 0 {
			drain()
		}
	}
	if _, err := r.DeliverBatch(from, run); err != nil {
		b.Fatal(err)
	}
	drain()
	if st := r.Stats(); st.Sent != uint64(i) || sys.DeadLetters() != 0 {
		b.Fatalf("sent %d of %d, %d dead letters", st.Sent, i, sys.DeadLetters())
	}
}

func benchSendPath(b *testing.B, window int, withCtx bool) {
	r, l, sys, to := newSender(b)
	var msg any = benchBlob{Data: make([]byte, 100)}
	w := &l.user.w // its goroutine asleep: the queue is drained here
	w.fw = codec.NewFrameWriter(io.Discard, 0)
	q := l.user.q
	drain := func(keep int) {
		for q.len() > keep {
			w.batch = q.takeBatch(w.batch[:0])
			if len(w.batch) == 0 {
				return
			}
			if err := w.put(); err != nil {
				b.Fatal(err)
			}
			if err := w.fw.Flush(); err != nil {
				b.Fatal(err)
			}
			clear(w.batch)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	cpu0 := testutil.ProcessCPU()
	defer func() { reportCPU(b, cpu0) }()
	for b.Loop() {
		if window > 0 {
			msg = benchBlob{Data: make([]byte, 100)}
		}
		if withCtx {
			if err := r.DeliverCtx(ctx, transport.Envelope{To: to, Msg: msg}); err != nil {
				b.Fatal(err)
			}
		} else {
			sys.Send(to, msg)
		}
		if i++; i%chunkSize == 0 {
			drain(window)
		}
	}
	drain(0)
	if st := r.Stats(); st.Sent != uint64(i) || sys.DeadLetters() != 0 {
		b.Fatalf("sent %d of %d, %d dead letters", st.Sent, i, sys.DeadLetters())
	}
}

// reportCPU reports the process's CPU time per operation since cpu0: unlike
// ns/op, it hardly depends on what else runs on the machine.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((testutil.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
