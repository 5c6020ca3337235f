package latency

import (
	"testing"
	"testing/synctest"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestLivenessDeclaresSilentPeerInTime plays the prober's loop against a
// fake clock: a peer that answers is never declared; one that stops
// answering is declared once, within the liveness timeout + one tick of
// its last answered ping, and not again before another timeout.
func TestLivenessDeclaresSilentPeerInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 8 * time.Second
		pt := livenessTimes(d)
		if pt.every != d/4 || pt.timeout != d/4 || pt.tick != time.Second {
			t.Fatalf("times %+v", pt)
		}
		good, bad := testhost.NewPeerID(t), testhost.NewPeerID(t)
		state := map[libp2ppeer.ID]*probeState{}
		start := time.Now()
		silentFrom := start.Add(20 * time.Second) // bad stops answering then
		var lastAnswered time.Time                // of bad's pings
		var declared []time.Time
		type out struct {
			id   libp2ppeer.ID
			sent time.Time
		}
		var pending []out
		for time.Since(start) < 60*time.Second {
			now := time.Now()
			// Pings out for a ping timeout settle: answered when the
			// peer was not silent when the ping went out.
			kept := pending[:0]
			for _, o := range pending {
				if now.Sub(o.sent) < pt.timeout/2 {
					kept = append(kept, o)
					continue
				}
				var err error
				if o.id == bad && !o.sent.Before(silentFrom) {
					err = errNoPong
				} else if o.id == bad {
					lastAnswered = o.sent
				}
				settleWith(state, probeResult{id: o.id, err: err}, now, pt)
			}
			pending = kept
			for _, st := range state {
				st.observe(true, 0, now)
			}
			for _, id := range silentPeers(state, now, pt.liveness) {
				if id == good {
					t.Fatalf("the answering peer declared at %v", now.Sub(start))
				}
				declared = append(declared, now)
			}
			for _, id := range duePeers([]libp2ppeer.ID{good, bad}, state, now, latencyParallel) {
				pending = append(pending, out{id, now})
			}
			time.Sleep(pt.tick)
		}
		if len(declared) == 0 {
			t.Fatal("the silent peer was never declared")
		}
		if late := declared[0].Sub(lastAnswered); late < d || late > d+pt.tick {
			t.Fatalf("declared %v after its last answered ping, want within [%v, %v]", late, d, d+pt.tick)
		}
		if late := declared[0].Sub(silentFrom); late > d+pt.tick {
			t.Fatalf("declared %v after going silent, want ≤ %v", late, d+pt.tick)
		}
		for i := 1; i < len(declared); i++ {
			if declared[i].Sub(declared[i-1]) < d {
				t.Fatalf("declared again %v later", declared[i].Sub(declared[i-1]))
			}
		}
	})
}

// TestLivenessPingsStayRegular: with a liveness timeout, failed pings to
// a peer that needs it do not slow the pings down (without one they back
// off).
func TestLivenessPingsStayRegular(t *testing.T) {
	p := testhost.NewPeerID(t)
	t0 := time.Now()
	for _, c := range []struct {
		pt      probeTimes
		atLeast time.Duration
		atMost  time.Duration
	}{
		{livenessTimes(12 * time.Second), 3 * time.Second * 9 / 10, 3 * time.Second * 11 / 10},
		{latencyTimes(), latencyMaxWait * 9 / 10, latencyMaxWait * 11 / 10},
	} {
		state := map[libp2ppeer.ID]*probeState{}
		duePeers([]libp2ppeer.ID{p}, state, t0, 1)
		state[p].observe(true, 0, t0)
		for range 10 {
			settleWith(state, probeResult{id: p, err: errNoPong}, t0, c.pt)
		}
		if next := state[p].next.Sub(t0); next < c.atLeast || next > c.atMost {
			t.Fatalf("times %+v: after 10 failures due in %v, want [%v, %v]", c.pt, next, c.atLeast, c.atMost)
		}
	}
}
