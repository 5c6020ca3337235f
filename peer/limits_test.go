package peer

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/routing"
)

// Resource limits: connections refused beyond them, stream windows, and
// limits too small for the maximum frame.

// TestLimitsRefuseConnections: with at most one inbound connection, the
// first peer connects and exchanges messages, the second is refused.
func TestLimitsRefuseConnections(t *testing.T) {
	a := newTestNode(t, WithLimits(Limits{ConnsInbound: 1, Memory: 256 << 20}))
	if _, err := a.System().Spawn("echo", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(s string) { c.Reply(s); c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	b, c := newTestNode(t), newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatalf("first inbound connection: %v", err)
	}
	echo, err := Ref(a.ID(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.System().Ask(ctx, echo, "hi"); err != nil || v != "hi" {
		t.Fatalf("ask within the limits: %v, %v", v, err)
	}
	if err := c.Connect(ctx, *a.AddrInfo()); err == nil {
		t.Fatal("a second inbound connection was accepted with ConnsInbound 1")
	}
}

// TestStreamWindow: a peer may send exactly the receiver's stream window
// on a stream the receiver does not read, and no more.
func TestStreamWindow(t *testing.T) {
	for _, w := range []int{0, MinStreamWindow, 3 << 20} {
		want := w
		if w == 0 {
			want = DefaultStreamWindow
		}
		a := newTestNode(t, WithLimits(Limits{StreamWindow: w}))
		b := newTestNode(t)
		release := make(chan struct{})
		defer close(release)
		const proto = "/troupe-test/stall/1.0.0"
		a.Host().SetStreamHandler(proto, func(s network.Stream) { <-release; _ = s.Reset() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		s, err := b.Host().NewStream(ctx, a.ID(), proto)
		if err != nil {
			t.Fatal(err)
		}
		// The writes stop at the window; a deadline ends the last one.
		chunk, sent := make([]byte, 64<<10), 0
		for sent <= want {
			_ = s.SetWriteDeadline(time.Now().Add(time.Second))
			n, err := s.Write(chunk)
			sent += n
			if err != nil {
				break
			}
		}
		_ = s.Reset()
		// The multistream header and the protocol name (46 bytes) went
		// first, in the same window.
		if sent > want || sent < want-64 {
			t.Errorf("window %d: %d bytes sent to a stream that is not read, want %d less the protocol header", w, sent, want)
		}
	}
}

// TestLimitsFitTheMaxFrame: whatever the maximum frame, every memory limit
// that a stream's reader is charged in leaves room for one message of it,
// up to the largest frame routing allows.
func TestLimitsFitTheMaxFrame(t *testing.T) {
	for _, maxFrame := range []int{4 << 20, 24 << 20, 512 << 20, codec.MaxFrameLimit} {
		rm, err := resourceManager(Limits{}, maxFrame)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := rm.OpenStream(libp2ppeer.ID("some peer"), network.DirInbound)
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.SetProtocol(routing.ProtoMsg); err != nil {
			t.Fatal(err)
		}
		if err := sc.ReserveMemory(maxFrame+64<<10, network.ReservationPriorityHigh); err != nil {
			t.Errorf("max frame %d MiB: a message of the maximum frame is refused: %v", maxFrame>>20, err)
		}
		sc.Done()
		_ = rm.Close()
	}
}
