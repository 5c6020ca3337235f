package routing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// A writer's calls that may block on the network (a dial, a stream's
// end) hold no lock, and keep the writing right: no write-through takes
// a batch's place meanwhile. The right's transitions themselves are
// tested as data in linkstate_test.go, a dial's in dialstate_test.go.

// failingHost is a host on which no stream opens: it reports when each
// NewStream was called.
type failingHost struct {
	host.Host
	dials chan time.Time
}

var errNoStream = errors.New("no stream today")

func (h *failingHost) NewStream(context.Context, libp2ppeer.ID, ...protocol.ID) (network.Stream, error) {
	h.dials <- time.Now()
	return nil, errNoStream
}

// The writer drives its dial (dialState): three attempts, at least 100
// and 200 ms apart, then what it had in hand fails as unreachable (an
// Ask learns why at once); the next message dials anew.
func TestWriterGivesUpAfterThreeDials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := &failingHost{Host: testhost.NewHost(t), dials: make(chan time.Time, 16)}
	_, sysA := testPeerOn(t, h, config{Logger: testutil.QuietLogger()}, nil)
	far, err := actor.NewRef(testhost.NewHost(t).ID().String(), "sink")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if _, err := sysA.Ask(ctx, far, "anyone?"); !errors.Is(err, ErrUnreachable) || !errors.Is(err, errNoStream) {
			t.Fatalf("round %d: ask: %v, want ErrUnreachable with the dial's error", round, err)
		}
		var at [maxDials]time.Time
		for i := range at {
			at[i] = recvWithin(t, ctx, h.dials)
		}
		if d1, d2 := at[1].Sub(at[0]), at[2].Sub(at[1]); d1 < 100*time.Millisecond || d2 < 200*time.Millisecond {
			t.Fatalf("round %d: attempts %v and %v apart, want at least 100 and 200 ms", round, d1, d2)
		}
		select {
		case <-h.dials:
			t.Fatalf("round %d: a fourth attempt", round)
		default:
		}
	}
}

// A close during the wait between two attempts ends the dial at once:
// no attempt after it, the batch in hand lost and counted
// (Stats.Undeliverable), and the writer gone when Close returns.
func TestCloseDuringADialWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := &failingHost{Host: testhost.NewHost(t), dials: make(chan time.Time, 16)}
	r, sysA := testPeerOn(t, h, config{Logger: testutil.QuietLogger()}, nil)
	far, err := actor.NewRef(testhost.NewHost(t).ID().String(), "sink")
	if err != nil {
		t.Fatal(err)
	}
	sysA.Send(far, "lost")
	recvWithin(t, ctx, h.dials)
	closed, stop := context.WithCancel(ctx)
	stop() // no drain: the router's context ends at once
	at := time.Now()
	_ = r.Close(closed)
	for len(h.dials) > 0 { // a slow test may see the second attempt before it closes
		if d := <-h.dials; d.After(at) {
			t.Fatalf("an attempt %v after the close", d.Sub(at))
		}
	}
	if st := r.Stats(); st.Undeliverable != 1 {
		t.Fatalf("%d undeliverable, want the batch in hand (1)", st.Undeliverable)
	}
}

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

func (*relayedStream) Protocol() protocol.ID { return ProtoMsg }

func (s *relayedStream) Read([]byte) (int, error) {
	select {
	case s.reading <- struct{}{}:
	default:
	}
	<-s.eof
	return 0, io.EOF
}

// directStream is a stream on a direct connection whose peer reads it
// to its end at once.
type directStream struct{ fakeStream }

func (*directStream) CloseWrite() error { return nil }

func (*directStream) SetReadDeadline(time.Time) error { return nil }

func (*directStream) Protocol() protocol.ID { return ProtoMsg }

func (*directStream) Read([]byte) (int, error) { return 0, io.EOF }

// limitedConn is a live connection through a relay.
type limitedConn struct{ openConn }

func (limitedConn) Stat() network.ConnStats {
	return network.ConnStats{Stats: network.Stats{Limited: true}}
}

// relayHost is a host with a direct connection to every peer whose
// streams open from streams, in turn.
type relayHost struct {
	host.Host
	streams chan network.Stream
}

func (h *relayHost) Network() network.Network { return directNet{h.Host.Network()} }

func (h *relayHost) NewStream(ctx context.Context, _ libp2ppeer.ID, _ ...protocol.ID) (network.Stream, error) {
	select {
	case s := <-h.streams:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type directNet struct{ network.Network }

func (directNet) ConnsToPeer(libp2ppeer.ID) []network.Conn { return []network.Conn{openConn{}} }

// lockedBuffer is a bytes.Buffer the writer writes and a test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// messages returns the user messages written so far.
func (b *lockedBuffer) messages(t *testing.T, r *Router) []any {
	t.Helper()
	b.mu.Lock()
	wire := bytes.NewReader(slices.Clone(b.buf.Bytes()))
	b.mu.Unlock()
	fr := codec.NewFrameReader(wire, r.cfg.MaxFrame, codec.WithCompact(true)) // ProtoMsg's frames
	var got []any
	for {
		var env codec.Envelope
		v, err := fr.ReadMessage(r.cfg.Registry, &env)
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if env.Kind == codec.KindUser {
			got = append(got, v)
		}
	}
}

// A writer moving off a relay keeps its writing right while the peer
// reads the relayed stream to its end, which may take writeTimeout: a
// push meanwhile claims nothing and writes nothing on that stream; its
// message stays queued for the writer, which then opens a new stream and
// writes it there, after the batch that found a direct connection.
func TestMoveOffRelayHoldsTheRight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var relayed, direct lockedBuffer
	s1 := &relayedStream{fakeStream: fakeStream{w: &relayed}, reading: make(chan struct{}, 1), eof: make(chan struct{})}
	h := &relayHost{Host: testhost.NewHost(t), streams: make(chan network.Stream, 2)}
	h.streams <- s1
	h.streams <- &directStream{fakeStream{w: &direct}}
	r, sys := testPeerOn(t, h, config{Logger: testutil.QuietLogger()}, nil)
	peer := testhost.NewHost(t).ID()
	to, err := actor.NewRef(peer.String(), "sink")
	if err != nil {
		t.Fatal(err)
	}
	sys.Send(to, "one")
	testutil.Eventually(t, 10*time.Second, "the first message on the relayed stream", func() bool {
		return len(relayed.messages(t, r)) == 1
	})
	sys.Send(to, "two") // its round finds the direct connection
	recvWithin(t, ctx, s1.reading)
	l, err := r.link(peer.String())
	if err != nil {
		t.Fatal(err)
	}
	q := l.user.q
	ok, claimed := q.pushClaim("sink", "", "three", 0, false)
	queued := q.len()
	close(s1.eof)
	if !ok || claimed || queued != 1 {
		t.Fatalf("push while the writer ends its stream: queued %v, claimed %v, %d waiting; want queued, not claimed, 1", ok, claimed, queued)
	}
	testutil.Eventually(t, 10*time.Second, "the rest on the direct stream", func() bool {
		return len(direct.messages(t, r)) == 2
	})
	if got, want := relayed.messages(t, r), []any{"one"}; !slices.Equal(got, want) {
		t.Fatalf("on the relayed stream: %v, want %v", got, want)
	}
	if got, want := direct.messages(t, r), []any{"two", "three"}; !slices.Equal(got, want) {
		t.Fatalf("on the direct stream: %v, want %v", got, want)
	}
	if n := r.movedOffRelay.Load(); n != 1 {
		t.Fatalf("moved off relay %d times, want once", n)
	}
}
