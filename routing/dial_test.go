package routing

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// A writer's calls that may block on the network (a dial, a stream's
// end) hold no lock, and keep the writing right: no write-through takes
// a batch's place meanwhile. The right's transitions themselves are
// tested as data in linkstate_test.go.

// slowOpenHost is a host whose NewStream signals on opening, then waits
// until open is closed or its context ends.
type slowOpenHost struct {
	host.Host
	opening chan struct{}
	open    chan struct{}
}

func (h *slowOpenHost) NewStream(ctx context.Context, p libp2ppeer.ID, protos ...protocol.ID) (network.Stream, error) {
	select {
	case h.opening <- struct{}{}:
	default:
	}
	select {
	case <-h.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Host.NewStream(ctx, p, protos...)
}

// A writer whose stream takes long to open keeps its writing right
// meanwhile: a push claims nothing, so no write-through could write
// ahead of the batch in hand. Once the stream is open, the batch it had
// in hand ("one") goes first, and what was queued meanwhile ("two")
// after it.
func TestWriterDialsHoldingItsRight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hB, _, sysB := testRouter(t, 0)
	got := spawnSink(t, sysB)
	slow := &slowOpenHost{Host: testhost.NewHost(t), opening: make(chan struct{}, 1), open: make(chan struct{})}
	rA, sysA := testPeerOn(t, slow, config{Logger: testutil.QuietLogger()}, nil)
	if err := slow.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	to, _ := actor.NewRef(hB.ID().String(), "sink")
	sysA.Send(to, "one")
	recvWithin(t, ctx, slow.opening)
	l, err := rA.link(hB.ID().String())
	if err != nil {
		t.Fatal(err)
	}
	q := l.user.q
	ok, claimed := q.pushClaim("sink", "", "two", 0, false)
	q.mu.Lock()
	h := q.right.holder
	q.mu.Unlock()
	if !ok || claimed || h != heldByWriter {
		t.Fatalf("push while dialing: queued %v, claimed %v, right held by %v; want queued, unclaimed, the writer's", ok, claimed, h)
	}
	close(slow.open)
	for _, want := range []string{"one", "two"} {
		if m := recvWithin(t, ctx, got); m != want {
			t.Fatalf("got %v, want %q", m, want)
		}
	}
}

// relayedStream is a stream on a relayed connection whose peer reads it
// to its end once eof is closed; it signals on reading when the writer
// waits for that.
type relayedStream struct {
	fakeStream
	reading chan struct{}
	eof     chan struct{}
}

func (*relayedStream) Conn() network.Conn { return limitedConn{} }

func (*relayedStream) CloseWrite() error { return nil }

func (*relayedStream) SetReadDeadline(time.Time) error { return nil }

func (s *relayedStream) Read([]byte) (int, error) {
	select {
	case s.reading <- struct{}{}:
	default:
	}
	<-s.eof
	return 0, io.EOF
}

// limitedConn is a live connection through a relay.
type limitedConn struct{ openConn }

func (limitedConn) Stat() network.ConnStats {
	return network.ConnStats{Stats: network.Stats{Limited: true}}
}

// directHost is a host with a direct connection to every peer.
type directHost struct{ host.Host }

func (directHost) Network() network.Network { return directNet{} }

type directNet struct{ network.Network }

func (directNet) ConnsToPeer(libp2ppeer.ID) []network.Conn { return []network.Conn{openConn{}} }

// A writer moving off a relay keeps its writing right while the peer
// reads the relayed stream to its end, which may take writeTimeout: a
// push meanwhile claims nothing and writes nothing on that stream; its
// message stays queued for the writer, which then opens a new stream.
func TestMoveOffRelayHoldsTheRight(t *testing.T) {
	r, l, _, _ := newSender(t)
	r.h = directHost{}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	w, q := &l.user.w, l.user.q
	var wire bytes.Buffer
	s := &relayedStream{fakeStream: fakeStream{w: &wire}, reading: make(chan struct{}, 1), eof: make(chan struct{})}
	w.use(s)
	// The writer found its queue empty with work in hand (it moves off
	// the relay with cancellations to send, say): it keeps the right.
	if q.take(nil, false, s) != nil {
		t.Fatal("a batch from an empty queue")
	}
	done := make(chan struct{})
	go func() { // the writer's round, as the right's holder
		defer close(done)
		w.moveOffRelay()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recvWithin(t, ctx, s.reading)
	ok, claimed := q.pushClaim("sink", "source", "m", 0, false)
	written, queued := wire.Len(), q.len()
	close(s.eof)
	recvWithin(t, ctx, done)
	if !ok || claimed {
		t.Fatalf("push: queued %v, claimed %v; want queued, not claimed", ok, claimed)
	}
	if written != 0 || queued != 1 {
		t.Fatalf("a push while the writer ended its stream: wrote %d bytes, left %d queued; want 0, 1", written, queued)
	}
	if w.s != nil || r.movedOffRelay.Load() != 1 {
		t.Fatalf("stream %v, moved off relay %d times; want none and once", w.s, r.movedOffRelay.Load())
	}
}
