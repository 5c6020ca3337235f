package peer

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil/testhost"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// TestDuePeers: a peer is due when first seen and latencyEvery after its
// last ping, not before; one that left is forgotten.
func TestDuePeers(t *testing.T) {
	a, b := testhost.NewPeerID(t), testhost.NewPeerID(t)
	last := map[libp2ppeer.ID]time.Time{}
	t0 := time.Now()
	if due := duePeers([]libp2ppeer.ID{a, b}, last, t0); len(due) != 2 {
		t.Fatalf("first sight: %d due, want 2", len(due))
	}
	if due := duePeers([]libp2ppeer.ID{a, b}, last, t0.Add(latencyEvery-time.Second)); len(due) != 0 {
		t.Fatalf("before latencyEvery: %d due", len(due))
	}
	if due := duePeers([]libp2ppeer.ID{a}, last, t0.Add(latencyEvery)); len(due) != 1 || due[0] != a {
		t.Fatalf("after latencyEvery: %v due, want a", due)
	}
	if _, ok := last[b]; ok {
		t.Fatal("a peer that left is still recorded")
	}
}

// TestRoundTripKnownWithoutAPing: a node knows the round trip to a peer
// soon after it connects, with no ping asked for.
func TestRoundTripKnownWithoutAPing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := newTestNode(t), newTestNode(t)
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	for a.Host().Peerstore().LatencyEWMA(b.ID()) == 0 || b.Host().Peerstore().LatencyEWMA(a.ID()) == 0 {
		select {
		case <-ctx.Done(): // the peerstore tells of no update
			t.Fatal("no round trip recorded within 10 s of connecting")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
