package routing

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// benchBlob is the 100-byte message of the sending and receiving
// benchmarks.
type benchBlob struct{ Data []byte }

// BenchmarkInboundRead: what a receiving peer does per message, without
// the network: a stream reader decodes 100-byte messages from memory and
// hands them to one actor on a loop, at most four windows ahead of it.
func BenchmarkInboundRead(b *testing.B) { benchInboundRead(b, false) }

// BenchmarkInboundReadCompact is BenchmarkInboundRead on a compact (1.1.0)
// stream, where all but the first frame are short envelopes.
func BenchmarkInboundReadCompact(b *testing.B) { benchInboundRead(b, true) }

func benchInboundRead(b *testing.B, compact bool) {
	const window, frames = 10_000, 10_000
	h := testhost.NewHost(b, libp2p.NoListenAddrs)
	reg, err := codec.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	codec.MustRegister[benchBlob](reg, "bench.Blob")
	logger := testutil.QuietLogger()
	var r *Router
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		var err error
		r, err = newRouter(config{Host: h, Registry: reg, Port: p, Logger: logger})
		return r, nil, err
	}, actor.WithPeer(h.ID().String()), actor.WithLogger(logger), actor.WithWatchdog(0))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
		_ = r.Close(ctx)
	}()
	acks := make(chan int, b.N/window+2)
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		got := 0
		var h actor.Case
		h = actor.On(func(m benchBlob) {
			if len(m.Data) != 100 || binary.LittleEndian.Uint64(m.Data) != uint64(got%frames) {
				acks <- -1
				return
			}
			if got++; got%window == 0 || got == b.N {
				acks <- got
			}
			c.Receive(h)
		})
		c.Receive(h)
	}); err != nil {
		b.Fatal(err)
	}
	var stream bytes.Buffer
	fw := codec.NewFrameWriter(&stream, 0, codec.WithCompact(compact))
	for i := range frames {
		d := make([]byte, 100)
		binary.LittleEndian.PutUint64(d, uint64(i))
		_, body, err := reg.Encode(benchBlob{Data: d})
		if err != nil {
			b.Fatal(err)
		}
		if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "sink", FromName: "source", Type: "bench.Blob", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		b.Fatal(err)
	}
	in := inbound{r: r, remote: h.ID(), remoteStr: h.ID().String(), out: r.sys.NewInbound(), v11: compact}
	src := &windowedStream{stream: stream.Bytes(), frames: frames, window: window, total: b.N, acks: acks, tb: b}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testutil.ProcessCPU()
	if err := in.read(codec.NewFrameReader(src, 0, codec.WithCompact(compact))); err != nil {
		b.Fatal(err)
	}
	for ; src.acked < b.N; src.acked += window {
		src.wait()
	}
	in.out.Close()
	b.ReportMetric(float64((testutil.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// windowedStream reads total frames from a stream of frames, over and
// over, and blocks, as a network stream would, while the sink has not
// acknowledged all but four windows of the frames read.
type windowedStream struct {
	stream        []byte
	frames        int // in stream
	window, total int
	acks          <-chan int
	tb            testing.TB

	off, sent, acked int // in stream; frames read; frames acked
	chunkEnd         int // offset in stream where the frames allowed end
}

func (w *windowedStream) wait() {
	if n := <-w.acks; n < 0 {
		w.tb.Error("the sink got a wrong message")
	}
}

func (w *windowedStream) Read(p []byte) (int, error) {
	if w.off == w.chunkEnd {
		if w.sent == w.total {
			return 0, io.EOF
		}
		for ; w.acked < w.sent-4*w.window; w.acked += w.window {
			w.wait()
		}
		if w.off == len(w.stream) {
			w.off = 0
		}
		n := min(w.frames, w.total-w.sent)
		w.chunkEnd = frameOffset(w.tb, w.stream, n)
		w.sent += n
	}
	k := copy(p, w.stream[w.off:w.chunkEnd])
	w.off += k
	return k, nil
}

// frameOffset returns the offset of frame n in a stream of frames.
func frameOffset(tb testing.TB, stream []byte, n int) int {
	off := 0
	for range n {
		size, k := binary.Uvarint(stream[off:])
		if k <= 0 {
			tb.Fatal("bad frame length")
		}
		off += k + int(size)
	}
	return off
}

// TestNewStreamWaitsForTheOldOnesReader: a writer opens a new stream only
// after it gave up its last one, whose reader may still be handing on
// what it decoded. The new stream's messages reach the actors only after
// that reader returned: nothing from the old stream arrives after the
// new stream's first message. The old reader is held before it hands on
// its batch until the new stream has either superseded it or delivered.
func TestNewStreamWaitsForTheOldOnesReader(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		mu    sync.Mutex
		order []string
	)
	arrived := make(chan string, 16)
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(m string) {
			mu.Lock()
			order = append(order, m)
			mu.Unlock()
			if m == "new" || m == "end" {
				arrived <- m
			}
			if m == "new" {
				free() // without supersede, the old reader goes on now
			}
			c.Receive(h)
		})
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	oldDone := make(chan (<-chan struct{}), 1)
	var held atomic.Bool
	r.hooks.inboundFlush = func(in *inbound) {
		if held.CompareAndSwap(false, true) { // the first stream's first batch
			oldDone <- in.self.done
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	r.hooks.superseded = free

	rf1 := newRawFrames(t, h)
	rf1.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7})
	for i := range 3 {
		rf1.send(codec.KindUser, "string", fmt.Sprint("old-", i))
	}
	done1 := recvWithin(t, ctx, oldDone) // its reader holds its batch
	rf2 := rf1.another(h)
	rf2.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7})
	rf2.send(codec.KindUser, "string", "new")
	if recvWithin(t, ctx, arrived) != "new" {
		t.Fatal("expected the new stream's message")
	}
	_ = rf1.s.CloseWrite() // without supersede, its reader goes on until then
	recvWithin(t, ctx, done1)
	rf2.send(codec.KindUser, "string", "end")
	if recvWithin(t, ctx, arrived) != "end" {
		t.Fatal("expected the end")
	}
	mu.Lock()
	defer mu.Unlock()
	seenNew := false
	for _, m := range order {
		switch {
		case m == "new":
			seenNew = true
		case strings.HasPrefix(m, "old") && seenNew:
			t.Fatalf("%s arrived after the new stream's message: %q", m, order)
		}
	}
	if !slices.Contains(order, "old-0") {
		t.Fatalf("the old stream's first batch was not handed on: %q", order)
	}
}

// TestStaleStreamHandsNothingOn: streams on two connections may reach
// their readers in either order; the writer's numbers in the hellos say
// which is newer. A stream whose hello carries a lower number than one
// already being read is reset and hands nothing on; the newer one goes on.
func TestStaleStreamHandsNothingOn(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := spawnSink(t, sys)
	// open sends the hello of the writer's stream number n on rf, then m,
	// in one write: a stale stream is reset as soon as its hello is read,
	// and a second write could meet that reset.
	open := func(rf *rawFrames, n uint64, m string) {
		t.Helper()
		rf.write(codec.KindSystem, typeHello, helloBody{Incarnation: 7, Stream: n})
		rf.write(codec.KindUser, "string", m)
		rf.flush()
	}
	want := func(m string) {
		t.Helper()
		if g := recvWithin(t, ctx, got); g != m {
			t.Fatalf("got %v, want %s", g, m)
		}
	}
	rf := newRawFrames(t, h)
	open(rf, 5, "a")
	want("a")
	old := rf.another(h)
	open(old, 3, "stale")
	if !old.reset() {
		t.Fatal("the stale stream was not reset")
	}
	rf.send(codec.KindUser, "string", "b")
	want("b") // not "stale"
	// A newer stream supersedes the one being read.
	open(rf.another(h), 6, "c")
	want("c")
	if !rf.reset() {
		t.Fatal("the superseded stream was not reset")
	}
	if st := r.Stats(); st.StreamsReset != 0 || st.DecodeErrors != 0 {
		t.Fatalf("stats %+v: a stale stream is no bad input", st)
	}
}

// TestReaderPanicResetsOneStream: a panic in a stream's reader (here
// injected where it hands on a batch; in life a decoder bug) resets that
// stream and is counted; the node lives on, and another stream of the
// same peer is read as before.
func TestReaderPanicResetsOneStream(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 4)
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(m string) { got <- m; c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	var panicked atomic.Bool
	r.hooks.inboundFlush = func(*inbound) {
		if panicked.CompareAndSwap(false, true) {
			panic("a decoder bug")
		}
	}
	rf1 := newRawFrames(t, h)
	rf1.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7})
	rf1.send(codec.KindUser, "string", "decoded")
	buf := make([]byte, 1)
	_ = rf1.s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := rf1.s.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on the panicked stream: %v, want a reset", err)
	}
	if st := r.Stats(); st.ReaderPanics != 1 || st.StreamsReset != 1 {
		t.Fatalf("stats %+v: want one reader panic and one stream reset", st)
	}
	rf2 := rf1.another(h)
	rf2.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7})
	rf2.send(codec.KindUser, "string", "after")
	// What the panicked reader had decoded it still handed on.
	for _, want := range []string{"decoded", "after"} {
		if m := recvWithin(t, ctx, got); m != want {
			t.Fatalf("got %q, want %q", m, want)
		}
	}
}
