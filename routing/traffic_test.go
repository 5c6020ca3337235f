package routing

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil/testhost"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
)

// statsOf returns p's entry in stats, or false.
func statsOf(stats []PeerStats, p libp2ppeer.ID) (PeerStats, bool) {
	for _, s := range stats {
		if s.Peer == p {
			return s, true
		}
	}
	return PeerStats{}, false
}

// TestPeerStats: each side counts the messages it wrote to and read from
// the other, and forgets the peer once it disconnected.
func TestPeerStats(t *testing.T) {
	hA, rA, sysA := testRouter(t, 0)
	hB, rB, sysB := testRouter(t, 0)
	got := spawnSink(t, sysB)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hA.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	sink, _ := actor.NewRef(hB.ID().String(), "sink")
	const n = 10
	for i := range n {
		sysA.Send(sink, i)
	}
	for range n {
		recvWithin(t, ctx, got)
	}
	waitCond(t, "A counts what it sent and B what it read", func() bool {
		a, okA := statsOf(rA.PeerStats(), hB.ID())
		b, okB := statsOf(rB.PeerStats(), hA.ID())
		return okA && okB && a.Sent >= n && b.Received >= n && a.Received == 0 && b.Sent == 0
	})
	if err := hA.Network().ClosePeer(hB.ID()); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "A forgets B once disconnected", func() bool {
		_, ok := statsOf(rA.PeerStats(), hB.ID())
		return !ok
	})
}

// TestPeerStatsCountsQueuedBeforeTheFirstWrite: a link whose writer has
// not written yet (a stream still opening) shows what waits in it.
func TestPeerStatsCountsQueuedBeforeTheFirstWrite(t *testing.T) {
	r, _, _, _ := newSender(t)
	id := testhost.NewPeerID(t)
	l := newLink(r, id, id.String())
	r.links[id.String()] = l
	for i := range 3 {
		if ok, _ := l.user.q.pushClaim("sink", "source", i, 0, false); !ok {
			t.Fatalf("push %d refused", i)
		}
	}
	s, ok := statsOf(r.PeerStats(), id)
	if !ok || s.Queued != 3 || s.Sent != 0 {
		t.Fatalf("stats %+v (listed %v); want 3 queued, 0 sent", s, ok)
	}
}
