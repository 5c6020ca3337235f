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
// end) run with its lock let go.

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

// A writer whose stream takes long to open holds its lock meanwhile no
// more (it used to for up to 10 s), and is marked busy. Then the writer's
// round resumes as it should once it takes its lock back: the batch it
// had in hand ("one") goes first on the stream it opened, and what was
// queued meanwhile ("two", by Deliver) after it. That order held before
// the lock was let go too, and no write-through is tried here: while it
// dials a writer has no stream, so none could write ahead of its batch,
// and the queue is not asleep, so Deliver never writes through. That
// busy keeps a write-through out while the lock is let go is checked
// where there is a stream to write on: TestMoveOffRelayLetsGoOfTheLock.
func TestWriterDialsWithItsLockLetGo(t *testing.T) {
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
	w := &l.user.w
	if !w.mu.TryLock() {
		t.Fatal("the writer holds its lock while its stream opens")
	}
	busy := w.busy
	w.mu.Unlock()
	if !busy {
		t.Fatal("a writer dialing is not busy: a write-through could take its batch's place")
	}
	sysA.Send(to, "two")
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

// A writer moving off a relay lets go of its lock while the peer reads
// the relayed stream to its end, which may take writeTimeout. A
// write-through meanwhile finds it busy: it writes nothing on that
// stream, leaves its message queued and wakes the writer for it.
func TestMoveOffRelayLetsGoOfTheLock(t *testing.T) {
	r, l, _, _ := newSender(t)
	r.h = directHost{}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	defer r.cancel()
	w, q := &l.user.w, l.user.q
	var wire bytes.Buffer
	s := &relayedStream{fakeStream: fakeStream{w: &wire}, reading: make(chan struct{}, 1), eof: make(chan struct{})}
	w.use(s)
	// The writer found its queue empty (it moves off the relay with
	// cancellations in hand, say): a push then claims the wake-up.
	if q.takeBatch(nil) != nil {
		t.Fatal("a batch from an empty queue")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.moveOffRelay()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recvWithin(t, ctx, s.reading)
	if !w.mu.TryLock() {
		close(s.eof)
		t.Fatal("the writer holds its lock while the peer reads its relayed stream")
	}
	busy := w.busy
	w.mu.Unlock()
	ok, claimed := q.pushClaim("sink", "source", "m", 0, false)
	if ok && claimed {
		w.writeThrough(time.Now().Add(5 * time.Second))
	}
	var woken bool
	select {
	case <-q.ready:
		woken = true
	default:
	}
	written, queued := wire.Len(), q.len()
	close(s.eof)
	recvWithin(t, ctx, done)
	if !busy {
		t.Fatal("a writer ending its stream is not busy")
	}
	if !ok || !claimed {
		t.Fatalf("push: queued %v, claimed %v; want both", ok, claimed)
	}
	if written != 0 || queued != 1 || !woken {
		t.Fatalf("a write-through while the writer ended its stream: wrote %d bytes, left %d queued, woke the writer: %v; want 0, 1, true", written, queued, woken)
	}
	if w.s != nil || r.movedOffRelay.Load() != 1 {
		t.Fatalf("stream %v, moved off relay %d times; want none and once", w.s, r.movedOffRelay.Load())
	}
}
