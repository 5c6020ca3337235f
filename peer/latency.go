package peer

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// The round trip to each connected peer, which 'troupe peers' and the
// mesh view show, comes from the peerstore's latency record. libp2p fills
// it only when something pings, so the node pings each connected peer
// within a second of meeting it and about every latencyEvery after (a
// 32-byte ping each way, on an existing connection only: a probe never
// dials). A peer whose pings fail is pinged less and less often.

const (
	latencyTick     = time.Second      // how often the prober looks for due peers
	latencyEvery    = 30 * time.Second // how often each peer is pinged, ±10 %
	latencyMaxWait  = 5 * time.Minute  // the longest wait after failed pings
	latencyTimeout  = 5 * time.Second  // a ping unanswered by then failed
	latencyParallel = 8                // pings at once
)

// latencyProber pings peers to keep their round trips known. Its
// goroutine owns the probe state of every peer.
type latencyProber struct {
	stop context.CancelFunc
	done chan struct{}
}

// probeState is what the prober knows of one peer.
type probeState struct {
	next  time.Time // when it is due
	fails int       // pings failed in a row
	busy  bool      // a ping is out
	alive time.Time // when the last answered ping went out (first: when met)
	sent  time.Time // when the ping out went out
}

type probeResult struct {
	id  libp2ppeer.ID
	err error
}

// startLatencyProber starts pinging h's peers until close; with a
// liveness timeout (liveness.go) it pings them as often as that needs
// and calls gone for each peer silent for that long.
func startLatencyProber(h host.Host, pt probeTimes, gone func(libp2ppeer.ID)) *latencyProber {
	ctx, cancel := context.WithCancel(context.Background())
	p := &latencyProber{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		state := map[libp2ppeer.ID]*probeState{}
		results := make(chan probeResult, latencyParallel)
		out := 0
		tick := time.NewTicker(pt.tick)
		defer tick.Stop()
		for {
			now := time.Now()
			if pt.liveness > 0 {
				for _, id := range silentPeers(state, now, pt.liveness) {
					gone(id)
				}
			}
			for _, id := range duePeers(h.Network().Peers(), state, now, latencyParallel-out) {
				out++
				go func() { results <- probeResult{id, pingOnce(ctx, h, id, pt.timeout)} }()
			}
			select {
			case <-ctx.Done():
				for ; out > 0; out-- { // cancelled, they end at once
					<-results
				}
				return
			case r := <-results:
				out--
				settleWith(state, r, time.Now(), pt)
			case <-tick.C:
			}
		}
	}()
	return p
}

// close stops the prober and waits for it and its pings.
func (p *latencyProber) close() {
	p.stop()
	<-p.done
}

// duePeers returns at most slots connected peers that are due at now and
// have no ping out, marking them busy; a peer met for the first time is
// due at once. It forgets the peers no longer connected.
func duePeers(connected []libp2ppeer.ID, state map[libp2ppeer.ID]*probeState, now time.Time, slots int) []libp2ppeer.ID {
	live := make(map[libp2ppeer.ID]bool, len(connected))
	var due []libp2ppeer.ID
	for _, id := range connected {
		live[id] = true
		st := state[id]
		if st == nil {
			st = &probeState{next: now, alive: now}
			state[id] = st
		}
		if len(due) < slots && !st.busy && !now.Before(st.next) {
			st.busy, st.sent = true, now
			due = append(due, id)
		}
	}
	for id, st := range state {
		if !live[id] && !st.busy {
			delete(state, id)
		}
	}
	return due
}

// settle records a ping's result: the peer is due again latencyEvery
// later (±10 %, so that peers met together are not pinged in step), or,
// after n failures in a row, latencyEvery·2ⁿ later, at most
// latencyMaxWait.
func settle(state map[libp2ppeer.ID]*probeState, r probeResult, now time.Time) {
	settleWith(state, r, now, latencyTimes())
}

// settleWith is settle with the prober's times pt: with a liveness
// timeout, a peer whose ping failed is pinged again pt.every later,
// not less and less often, so that its silence is noticed in time.
func settleWith(state map[libp2ppeer.ID]*probeState, r probeResult, now time.Time, pt probeTimes) {
	st := state[r.id]
	if st == nil {
		return
	}
	st.busy = false
	wait := pt.every
	if r.err != nil {
		st.fails++
		if pt.liveness == 0 {
			wait = min(pt.every<<min(st.fails, 8), latencyMaxWait)
		}
	} else {
		st.fails = 0
		st.alive = st.sent
	}
	st.next = now.Add(wait - wait/10 + rand.N(wait/5))
}

// errNoPong is a ping that ended without an answer.
var errNoPong = errors.New("peer: no answer to the ping")

// pingOnce pings id once on an existing connection (libp2p records the
// round trip).
func pingOnce(ctx context.Context, h host.Host, id libp2ppeer.ID, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel() // ends ping's loop of pings
	r, ok := <-ping.Ping(network.WithNoDial(ctx, "latency probe"), h, id)
	switch {
	case !ok:
		return errNoPong
	case r.Error != nil:
		return r.Error
	}
	return nil
}
