package routing

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// What bounds a stream: stalls, the resource manager's memory, and Close
// waiting until the peer read what was queued.

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
		testutil.EventuallyNil(t, 5*time.Second, func() error {
			if n := reserved(); n != 0 {
				return fmt.Errorf("%s: %d bytes still reserved after the reset", name, n)
			}
			return nil
		})
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
