package routing

import (
	"bytes"
	"context"
	"encoding/binary"
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
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// testRouter starts a host on 127.0.0.1 with a Router and an actor system,
// all closed when the test ends.
func testRouter(t *testing.T, maxFrame int) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testRouterLogging(t, maxFrame, testutil.QuietLogger())
}

// testRouterTimed is testRouter with the router's timings tm (zero fields:
// the defaults).
func testRouterTimed(t *testing.T, tm timings) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testPeerTuned(t, Config{Logger: testutil.QuietLogger(), timings: tm}, nil, false)
}

// testRouterLogging is testRouter with the logger given.
func testRouterLogging(t *testing.T, maxFrame int, logger *slog.Logger) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testRouterHost(t, maxFrame, logger)
}

// testRouterHost is testRouterLogging with more options for the host.
func testRouterHost(t *testing.T, maxFrame int, logger *slog.Logger, opts ...libp2p.Option) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testPeer(t, maxFrame, logger, false, opts...)
}

// testPeer is a host with a Router bound to an actor system, and with
// Groups too when groups is set, as peer.Node assembles them.
func testPeer(t *testing.T, maxFrame int, logger *slog.Logger, groups bool, opts ...libp2p.Option) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testPeerTuned(t, Config{MaxFrame: maxFrame, Logger: logger}, nil, groups, opts...)
}

// testPeerTuned is testPeer with the router's config base (its host and
// registry are filled in; its timings go to the Groups too) and more
// options for the actor system.
func testPeerTuned(t *testing.T, base Config, sysOpts []actor.Option, groups bool, opts ...libp2p.Option) (host.Host, *Router, *actor.System) {
	t.Helper()
	logger := base.Logger
	h := testhost.NewHost(t, opts...)
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	base.Host, base.Registry = h, reg
	r, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	sysOpts = append([]actor.Option{actor.WithPeer(h.ID().String()), actor.WithRemote(r), actor.WithLogger(logger)}, sysOpts...)
	var g *Groups
	if groups {
		if g, err = NewGroups(GroupsConfig{Host: h, Registry: reg, Mesh: "test", Logger: logger, timings: base.timings}); err != nil {
			t.Fatal(err)
		}
		sysOpts = append(sysOpts, actor.WithGroups(g))
	}
	sys, err := actor.New(sysOpts...)
	if err != nil {
		t.Fatal(err)
	}
	if g != nil {
		g.Bind(sys)
	}
	if err := r.Bind(sys); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
		if g != nil {
			_ = g.Close(ctx)
		}
		_ = r.Close(ctx) // then NewHost's cleanup closes h
	})
	return h, r, sys
}

// rawFrames writes envelopes on a raw stream of the message protocol.
type rawFrames struct {
	t   *testing.T
	h   host.Host // the host the stream is from
	s   network.Stream
	fw  *codec.FrameWriter
	reg *codec.Registry
}

func newRawFrames(t *testing.T, to host.Host) *rawFrames {
	t.Helper()
	return newRawFramesOn(t, to, ProtoMsg)
}

// newRawFramesOn is newRawFrames on a stream of protocol proto.
func newRawFramesOn(t *testing.T, to host.Host, proto protocol.ID) *rawFrames {
	t.Helper()
	other := testhost.NewHost(t, libp2p.NoListenAddrs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := other.Connect(ctx, libp2ppeer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
	s, err := other.NewStream(ctx, to.ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := registerWire(reg); err != nil {
		t.Fatal(err)
	}
	return &rawFrames{t: t, h: other, s: s, fw: codec.NewFrameWriter(s, 0), reg: reg}
}

// another opens another stream of the same protocol from rf's host.
func (rf *rawFrames) another(to host.Host) *rawFrames {
	rf.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := rf.h.NewStream(ctx, to.ID(), rf.s.Protocol())
	if err != nil {
		rf.t.Fatal(err)
	}
	return &rawFrames{t: rf.t, h: rf.h, s: s, fw: codec.NewFrameWriter(s, 0), reg: rf.reg}
}

// send writes one envelope of v to actor "sink" and flushes.
func (rf *rawFrames) send(kind codec.Kind, typ string, v any) {
	rf.t.Helper()
	_, body, err := rf.reg.Encode(v)
	if err != nil {
		rf.t.Fatal(err)
	}
	if err := rf.fw.WriteEnvelope(&codec.Envelope{Kind: kind, To: "sink", FromName: "src", Type: typ, Body: body}); err != nil {
		rf.t.Fatal(err)
	}
	if err := rf.fw.Flush(); err != nil {
		rf.t.Fatal(err)
	}
}

func (rf *rawFrames) fragment(f fragmentBody) {
	rf.t.Helper()
	rf.send(codec.KindSystem, typeFragment, f)
}

// reset reports whether the other side reset the stream within 5 s.
func (rf *rawFrames) reset() bool {
	_ = rf.s.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rf.s.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "deadline")
}

// closed reports whether the other side closed the stream (not reset it)
// within 5 s.
func (rf *rawFrames) closed() bool {
	_ = rf.s.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rf.s.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

// spawnSink spawns an actor "sink" that passes on every message it gets.
func spawnSink(t *testing.T, sys *actor.System) <-chan any {
	t.Helper()
	got := make(chan any, 4)
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) { got <- m; c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFragmentsReassembled: fragments on a raw stream, with a small
// message between them, reach the actor as one message after the small one.
func TestFragmentsReassembled(t *testing.T) {
	h, _, sys := testRouter(t, 0)
	got := spawnSink(t, sys)
	big := strings.Repeat("troupe ", 30000) // 210,000 bytes
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := reg.Encode(big)
	if err != nil {
		t.Fatal(err)
	}
	rf := newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "string", Total: uint64(len(body)), Data: body[:100000]})
	rf.send(codec.KindUser, "string", "small")
	rf.fragment(fragmentBody{Data: body[100000:]})
	for _, want := range []string{"small", big} {
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("got %.40q (%d bytes), want %.40q (%d bytes)", m, len(m.(string)), want, len(want))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for a message of %d bytes", len(want))
		}
	}
}

// TestBadFragmentsResetTheStream: every fragment sequence that does not add
// up resets the stream and is counted; the node keeps serving.
func TestBadFragmentsResetTheStream(t *testing.T) {
	h, r, _ := testRouter(t, 256<<10)
	data := bytes.Repeat([]byte{0x41}, 1000)
	for name, frames := range map[string][]fragmentBody{
		"continuation first":   {{Data: data}},
		"longer than any max":  {{Type: "bytes", Total: codec.MaxFrameLimit + 1, Data: data}},
		"no type":              {{Total: 2000, Data: data}},
		"more than announced":  {{Type: "bytes", Total: 1500, Data: data}, {Data: data}},
		"new before last done": {{Type: "bytes", Total: 1500, Data: data}, {Type: "bytes", Total: 1500, Data: data}},
		"empty first":          {{Type: "bytes", Total: 1500}},
		"empty continuation":   {{Type: "bytes", Total: 1500, Data: data}, {}},
		"reply flag only":      {{Type: "bytes", Total: 1500, Data: data}, {Reply: true, Data: data[:500]}},
	} {
		before := r.Stats().StreamsReset
		rf := newRawFrames(t, h)
		for _, f := range frames {
			rf.fragment(f)
		}
		if !rf.reset() {
			t.Fatalf("%s: stream not reset", name)
		}
		if after := r.Stats().StreamsReset; after != before+1 {
			t.Fatalf("%s: %d streams reset, want %d", name, after, before+1)
		}
	}
}

// TestOverTheMaxFrameRefusedOneByOne: messages over the receiver's maximum
// frame from a sender whose maximum is larger, whole or in fragments, are
// refused one by one (dead letters here, counted); the messages around
// them arrive and the stream goes on.
func TestOverTheMaxFrameRefusedOneByOne(t *testing.T) {
	h, r, sys := testRouter(t, 2048)
	got := spawnSink(t, sys)
	rf := newRawFrames(t, h)
	rf.send(codec.KindUser, "string", "before")
	rf.send(codec.KindUser, "string", strings.Repeat("x", 10000)) // one frame
	_, body, err := rf.reg.Encode(bytes.Repeat([]byte{1}, 150000))
	if err != nil {
		t.Fatal(err)
	}
	rf.fragment(fragmentBody{Type: "bytes", Total: uint64(len(body)), Data: body[:fragmentData]})
	rf.send(codec.KindUser, "string", "between")
	for off := fragmentData; off < len(body); off += fragmentData {
		rf.fragment(fragmentBody{Data: body[off:min(off+fragmentData, len(body))]})
	}
	rf.send(codec.KindUser, "string", "after")
	// A signal over the maximum (a Down with a long reason) goes through:
	// a frame of minReadFrame bounds it. Nobody monitors here: it is
	// handed on and ignored.
	rf.send(codec.KindSystem, typeDown, downBody{ID: 9, Reason: reasonBody{Code: codeOther, Text: strings.Repeat("r", 5000)}})
	rf.send(codec.KindUser, "string", "last")
	for _, want := range []string{"before", "between", "after", "last"} {
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("got %.40q, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %q", want)
		}
	}
	// Stats count what was handed on just after it was: the stream's end,
	// which its reader answers once it counted all, makes them final.
	if err := rf.s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !rf.closed() {
		t.Fatal("the reader did not end the stream")
	}
	if st := r.Stats(); st.TooLargeIn != 2 || st.Received != 5 || st.StreamsReset != 0 || st.DecodeErrors != 0 || sys.DeadLetters() != 2 {
		t.Fatalf("stats %+v, %d dead letters; want 2 refused, 5 handed on, 2 dead letters, nothing reset", st, sys.DeadLetters())
	}
}

// TestStreamEndingInsideAMessage: a stream that ends (is closed, not
// reset) between the fragments of a message is reset and counted, like a
// truncated frame; one that ends between messages is closed.
func TestStreamEndingInsideAMessage(t *testing.T) {
	h, r, _ := testRouter(t, 0)
	before := r.Stats().StreamsReset
	rf := newRawFrames(t, h)
	rf.send(codec.KindUser, "string", "small")
	if err := rf.s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !rf.closed() {
		t.Fatal("a stream that ended between messages was not closed")
	}
	rf = newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "bytes", Total: 1500, Data: make([]byte, 1000)})
	if err := rf.s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !rf.reset() {
		t.Fatal("a stream that ended inside a message was not reset")
	}
	if after := r.Stats().StreamsReset; after != before+1 {
		t.Fatalf("%d streams reset, want %d", after-before, 1)
	}
}

// TestNewStreamStartsClean: the half-built message of a stream that broke
// is gone on the next stream: a continuation there is refused, and a whole
// message goes through.
func TestNewStreamStartsClean(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	got := make(chan any, 1)
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		c.Receive(actor.Any(func(m any) { got <- m }))
	}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0x41}, 1000)
	rf := newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "bytes", Total: 2000, Data: data})
	_ = rf.s.Reset()
	before := r.Stats().StreamsReset
	rf = newRawFrames(t, h)
	rf.fragment(fragmentBody{Data: data})
	if !rf.reset() || r.Stats().StreamsReset != before+1 {
		t.Fatal("a continuation of another stream's message was taken")
	}
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := reg.Encode(bytes.Repeat([]byte{0x42}, 1500))
	if err != nil {
		t.Fatal(err)
	}
	rf = newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "bytes", Total: uint64(len(body)), Data: body[:1000]})
	rf.fragment(fragmentBody{Data: body[1000:]})
	select {
	case m := <-got:
		if b, ok := m.([]byte); !ok || !bytes.Equal(b, bytes.Repeat([]byte{0x42}, 1500)) {
			t.Fatalf("got %T of %v", m, m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the message did not arrive")
	}
}

// TestCloseDuringLargeMessage: a router closing while its writer is in the
// middle of large messages to a peer that does not read gives up when the
// Close context ends, and reports the messages dropped.
func TestCloseDuringLargeMessage(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	other := testhost.NewHost(t)
	opened, release := make(chan struct{}, 1), make(chan struct{})
	other.SetStreamHandler(ProtoMsg, func(s network.Stream) {
		select { // never read
		case opened <- struct{}{}:
		default:
		}
		<-release
		_ = s.Reset()
	})
	t.Cleanup(func() { close(release) }) // before NewHost's cleanup closes other
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Connect(ctx, libp2ppeer.AddrInfo{ID: other.ID(), Addrs: other.Addrs()}); err != nil {
		t.Fatal(err)
	}
	to, err := actor.NewRef(other.ID().String(), "sink")
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0x43}, 1000<<10)
	for range 40 { // more than yamux and TCP buffer
		sys.Send(to, big)
	}
	select {
	case <-opened:
	case <-ctx.Done():
		t.Fatal("no stream opened")
	}
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer closeCancel()
	closed := make(chan error, 1)
	go func() { closed <- r.Close(closeCtx) }()
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v, want the context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
}

// A stream that stops in the middle of a frame, or of a large message, is
// reset after stallTimeout: what it holds is freed. Between messages a
// stream may idle as long as it likes.
func TestStalledStreamsAreReset(t *testing.T) {
	const stallTimeout = 300 * time.Millisecond
	h, r, sys := testRouterTimed(t, timings{stallTimeout: stallTimeout})
	got := spawnSink(t, sys)
	receive := func() any {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no message within 5 s")
			return nil
		}
	}
	idle := newRawFrames(t, h)
	idle.send(codec.KindUser, "bytes", []byte("one"))
	receive()
	// Three stall timeouts between messages: the stream lives on.
	_ = idle.s.SetReadDeadline(time.Now().Add(3 * stallTimeout))
	if _, err := idle.s.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("an idle stream: %v, want our own read deadline", err)
	}
	idle.send(codec.KindUser, "bytes", []byte("two"))
	if m := receive(); !bytes.Equal(m.([]byte), []byte("two")) {
		t.Fatalf("got %v", m)
	}
	before := r.Stats().StreamsReset
	mid := newRawFrames(t, h)
	if _, err := mid.s.Write(append(binary.AppendUvarint(nil, 1000), "the first bytes of 1000"...)); err != nil {
		t.Fatal(err)
	}
	if !mid.reset() || r.Stats().StreamsReset != before+1 {
		t.Fatalf("a stream stopped inside a frame was not reset: %+v", r.Stats())
	}
	large := newRawFrames(t, h)
	large.fragment(fragmentBody{Type: "bytes", Total: 100_000, Data: bytes.Repeat([]byte{1}, 1000)})
	if !large.reset() || r.Stats().StreamsReset != before+2 {
		t.Fatalf("a stream stopped inside a large message was not reset: %+v", r.Stats())
	}
}

// TestStreamBuffersAreChargedToTheResourceManager: what a stream's reader
// holds for a large message or a large frame counts in the host's resource
// manager. With 1 MiB per peer on the message protocols, a 600 KiB message
// in fragments goes through; a 2 MiB one in fragments, or a 1.5 MiB frame
// on a 1.0.0 stream, resets its stream when the reader would hold more
// than the limit allows, and is counted; what was reserved is released
// each time, and the node keeps serving.
func TestStreamBuffersAreChargedToTheResourceManager(t *testing.T) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	small := rcmgr.ResourceLimits{Memory: 1 << 20}
	cfg := rcmgr.PartialLimitConfig{ProtocolPeer: map[protocol.ID]rcmgr.ResourceLimits{ProtoMsg: small, ProtoMsg10: small}}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(cfg.Build(limits.AutoScale())))
	if err != nil {
		t.Fatal(err)
	}
	h, r, sys := testRouterHost(t, 0, testutil.QuietLogger(), libp2p.ResourceManager(rm))
	got := spawnSink(t, sys)
	lim := codec.DefaultLimits()
	lim.MaxStringLen = 4 << 20
	reg, err := codec.NewRegistry(codec.WithLimits(lim))
	if err != nil {
		t.Fatal(err)
	}
	// reserved is what the message protocols hold in the resource manager.
	reserved := func() (n int64) {
		for _, p := range []protocol.ID{ProtoMsg, ProtoMsg10} {
			_ = rm.ViewProtocol(p, func(s network.ProtocolScope) error {
				n += s.Stat().Memory
				return nil
			})
		}
		return n
	}
	// inFragments sends a message of size bytes in fragments on a new
	// stream; writes may fail once the node resets the stream.
	inFragments := func(size int) *rawFrames {
		_, body, err := reg.Encode(bytes.Repeat([]byte{0x43}, size))
		if err != nil {
			t.Fatal(err)
		}
		rf := newRawFrames(t, h)
		for off := 0; off < len(body); off += fragmentData {
			f := fragmentBody{Data: body[off:min(off+fragmentData, len(body))]}
			if off == 0 {
				f.Type, f.Total = "bytes", uint64(len(body))
			}
			_, fb, err := rf.reg.Encode(f)
			if err != nil {
				t.Fatal(err)
			}
			if rf.fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, To: "sink", FromName: "src", Type: typeFragment, Body: fb}) != nil || rf.fw.Flush() != nil {
				break
			}
		}
		return rf
	}
	wantBytes := func(size int) {
		t.Helper()
		select {
		case m := <-got:
			if b, ok := m.([]byte); !ok || len(b) != size {
				t.Fatalf("got a %T of %d bytes, want %d bytes", m, len(m.([]byte)), size)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for a message of %d bytes", size)
		}
	}
	wantReset := func(name string, rf *rawFrames, before uint64) {
		t.Helper()
		if !rf.reset() {
			t.Fatalf("%s: stream not reset", name)
		}
		if after := r.Stats().StreamsReset; after != before+1 {
			t.Fatalf("%s: %d streams reset, want 1", name, after-before)
		}
		// Streams closed before may still be ending: their readers
		// release what they hold as they return.
		for deadline := time.Now().Add(5 * time.Second); reserved() != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d bytes still reserved after the reset", name, reserved())
			}
		}
	}

	rf := inFragments(600 << 10)
	wantBytes(600 << 10)
	if n := reserved(); n > 64<<10 { // a fragment's frame buffer at most
		t.Fatalf("%d bytes still reserved after a whole message", n)
	}
	_ = rf.s.Close()

	before := r.Stats().StreamsReset
	wantReset("2 MiB in fragments", inFragments(2<<20), before)

	before = r.Stats().StreamsReset
	rf = newRawFramesOn(t, h, ProtoMsg10)
	_, body, err := reg.Encode(bytes.Repeat([]byte{0x44}, 1536<<10))
	if err != nil {
		t.Fatal(err)
	}
	if rf.fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "sink", FromName: "src", Type: "bytes", Body: body}) == nil {
		_ = rf.fw.Flush()
	}
	wantReset("a 1.5 MiB frame", rf, before)

	rf = inFragments(600 << 10) // the node still takes large messages
	wantBytes(600 << 10)
	_ = rf.s.Close()
	if st := r.Stats(); st.DecodeErrors != 0 {
		t.Fatalf("%d decode errors: a refusal is not one", st.DecodeErrors)
	}
}

// TestCloseWaitsUntilThePeerRead: Close returns only once the peer's
// reader has taken everything written to it; closing the connection
// before that would lose what the peer had not read. The peer's reader
// here starts only when the test lets it.
func TestCloseWaitsUntilThePeerRead(t *testing.T) {
	hA, rA, sysA := testRouter(t, 0)
	hB, rB, sysB := testRouter(t, 0)
	got := spawnSink(t, sysB)
	gate := make(chan struct{})
	for _, p := range []protocol.ID{ProtoMsg, ProtoMsg10} {
		hB.SetStreamHandler(p, func(s network.Stream) { <-gate; rB.handleStream(s) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hA.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	sink, err := actor.NewRef(hB.ID().String(), "sink")
	if err != nil {
		t.Fatal(err)
	}
	const total = 500 // well within the stream's window: the writer writes them all
	for i := range total {
		sysA.Send(sink, i)
	}
	closed := make(chan error, 1)
	go func() { closed <- rA.Close(ctx) }()
	select { // a negative check: nothing announces that Close keeps waiting
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the peer read anything", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(gate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	_ = hA.Close() // as a node's Close does next
	for want := range total {
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("message %d arrived as %v", want, m)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d messages arrived", want, total)
		}
	}
}
