package latency

import (
	"context"
	"errors"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestDuePeers: a peer is due when first met, not again while its ping is
// out, and about latencyEvery after an answer; a peer that fails waits
// longer each time, up to latencyMaxWait; no more than the free slots go
// out; a peer that left is forgotten.
func TestDuePeers(t *testing.T) {
	a, b, c := testhost.NewPeerID(t), testhost.NewPeerID(t), testhost.NewPeerID(t)
	state := map[libp2ppeer.ID]*probeState{}
	t0 := time.Now()
	if due := duePeers([]libp2ppeer.ID{a, b, c}, state, t0, 2); len(due) != 2 {
		t.Fatalf("first met, 2 slots: %d due, want 2", len(due))
	}
	if due := duePeers([]libp2ppeer.ID{a, b, c}, state, t0, 8); len(due) != 1 {
		t.Fatalf("two pings out: %d due, want the third peer only", len(due))
	}
	settle(state, probeResult{id: a}, t0)
	settle(state, probeResult{id: b, err: errNoPong}, t0)
	if next := state[a].next.Sub(t0); next < latencyEvery*9/10 || next > latencyEvery*11/10 {
		t.Fatalf("after an answer, due in %v; want latencyEvery ±10 %%", next)
	}
	if due := duePeers([]libp2ppeer.ID{a, b, c}, state, t0.Add(latencyEvery/2), 8); len(due) != 0 {
		t.Fatalf("half a period later: %v due", due)
	}
	for range 20 {
		settle(state, probeResult{id: b, err: errNoPong}, t0)
	}
	if next := state[b].next.Sub(t0); next < latencyMaxWait*9/10 || next > latencyMaxWait*11/10 || state[b].fails != 21 {
		t.Fatalf("after 21 failures, due in %v (%d fails); want about %v", next, state[b].fails, latencyMaxWait)
	}
	duePeers([]libp2ppeer.ID{a}, state, t0, 8)
	if _, ok := state[b]; ok {
		t.Fatal("a peer that left is still recorded")
	}
	if _, ok := state[c]; !ok {
		t.Fatal("a peer that left with a ping out was forgotten before its result")
	}
}

// TestPingNeverDials: a probe of a peer that left fails at once with a
// refusal to dial, and dials nothing.
func TestPingNeverDials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := testhost.NewHost(t), testhost.NewHost(t)
	if err := a.Connect(ctx, libp2ppeer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
	if err := newPingStreams().ping(ctx, a, b.ID(), latencyTimeout); err != nil {
		t.Fatalf("a probe of a connected peer: %v", err)
	}
	if err := a.Network().ClosePeer(b.ID()); err != nil {
		t.Fatal(err)
	}
	if err := newPingStreams().ping(ctx, a, b.ID(), latencyTimeout); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a probe of a peer that left: %v; want a refusal to dial", err)
	}
	if len(a.Network().ConnsToPeer(b.ID())) != 0 {
		t.Fatal("the probe dialed the peer again")
	}
}
