package latency

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// livenessRun plays the prober's loop for a peer whose pings all fail
// (a ping settles half a timeout after it went out) against a fake
// clock for span, with need and received as the peer's life at each
// tick, and returns when it was pinged and when declared.
func livenessRun(t *testing.T, pt probeTimes, span time.Duration, life func(time.Duration) (bool, uint64)) (pings, declared []time.Duration) {
	t.Helper()
	p := testhost.NewPeerID(t)
	state := map[libp2ppeer.ID]*probeState{}
	start := time.Now()
	var out time.Time // when the ping out went out (zero: none)
	for time.Since(start) < span {
		now := time.Now()
		if !out.IsZero() && now.Sub(out) >= pt.timeout/2 {
			settleWith(state, probeResult{id: p, err: errNoPong}, now, pt)
			out = time.Time{}
		}
		if st := state[p]; st != nil {
			need, received := life(now.Sub(start))
			st.observe(need, received, now)
		}
		for range silentPeers(state, now, pt.liveness) {
			declared = append(declared, now.Sub(start))
		}
		for range duePeers([]libp2ppeer.ID{p}, state, now, 1) {
			pings = append(pings, now.Sub(start))
			out = now
		}
		time.Sleep(pt.tick)
	}
	return pings, declared
}

// TestLivenessOnlyForPeersWaitedOn: a silent peer nothing waits on is
// never declared, and pinged less and less often; once something waits
// on it, it is pinged at once, every liveness/4 after, and declared
// within liveness + one tick.
func TestLivenessOnlyForPeersWaitedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 8 * time.Second
		const from = 250 * time.Second // when something starts to wait on it
		pt := livenessTimes(d)
		pings, declared := livenessRun(t, pt, from+d+2*pt.tick, func(at time.Duration) (bool, uint64) { return at >= from, 0 })
		idle := 0
		for _, at := range pings {
			if at < from {
				idle++
			}
		}
		// At once, then 30 s·2ⁿ later (±10 %): 0, ~60, ~180 s.
		if idle < 2 || idle > 3 {
			t.Fatalf("pinged %d times while idle, want 2–3 (backing off): %v", idle, pings)
		}
		if len(declared) != 1 || declared[0] < from+d || declared[0] > from+d+pt.tick {
			t.Fatalf("declared at %v, want once in [%v, %v]", declared, from+d, from+d+pt.tick)
		}
		if pings[idle] > from+pt.tick {
			t.Fatalf("first ping after the need began at %v, want by %v", pings[idle], from+pt.tick)
		}
		if n := len(pings) - idle; n < 3 {
			t.Fatalf("%d pings in the liveness timeout, want ≥ 3: %v", n, pings)
		}
	})
}

// TestLivenessMessagesAreLife: a peer waited on whose pings all fail but
// whose messages keep coming is not declared; once they stop, it is,
// within liveness + one tick.
func TestLivenessMessagesAreLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 4 * time.Second
		const stop = 60 * time.Second // its last message
		pt := livenessTimes(d)
		_, declared := livenessRun(t, pt, stop+d+2*pt.tick, func(at time.Duration) (bool, uint64) {
			return true, uint64(min(at, stop) / (d / 2)) // one message every d/2
		})
		if len(declared) != 1 || declared[0] < stop+d-d/2 || declared[0] > stop+d+pt.tick {
			t.Fatalf("declared at %v, want once in [%v, %v]", declared, stop+d-d/2, stop+d+pt.tick)
		}
	})
}

// TestPingStreamReused: pings to a peer go on one stream while it is
// used within pingReuse; an older one is reset, and the next ping opens
// a new stream.
func TestPingStreamReused(t *testing.T) {
	a, b := testhost.NewHost(t), testhost.NewHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, libp2ppeer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
	ps := newPingStreams()
	defer ps.close()
	if err := ps.ping(ctx, a, b.ID(), time.Second); err != nil {
		t.Fatal(err)
	}
	first := ps.idle[b.ID()].s
	if err := ps.ping(ctx, a, b.ID(), time.Second); err != nil {
		t.Fatal(err)
	}
	if s, n := ps.idle[b.ID()].s, pingStreamsTo(a, b.ID()); s != first || n != 1 {
		t.Fatalf("a second ping on stream %v, want %v; %d ping streams, want 1", s, first, n)
	}
	if a.Peerstore().LatencyEWMA(b.ID()) == 0 {
		t.Fatal("no round trip recorded")
	}
	if s := ps.take(b.ID(), time.Now().Add(pingReuse)); s != nil {
		t.Fatal("a stream idle for pingReuse taken")
	}
	if err := ps.ping(ctx, a, b.ID(), time.Second); err != nil {
		t.Fatal(err)
	}
	if ps.idle[b.ID()].s == first {
		t.Fatal("the old stream pinged on again")
	}
}

// pingStreamsTo counts h's open ping streams to id (identify's and
// others' streams may still be open just after a connect).
func pingStreamsTo(h host.Host, id libp2ppeer.ID) int {
	n := 0
	for _, c := range h.Network().ConnsToPeer(id) {
		for _, s := range c.GetStreams() {
			if s.Protocol() == ping.ID {
				n++
			}
		}
	}
	return n
}
