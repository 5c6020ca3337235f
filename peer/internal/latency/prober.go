package latency

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// The round trip to each connected peer, which 'troupe peers' and the
// mesh view show, comes from the peerstore's latency record. libp2p fills
// it only when something pings, so the node pings each connected peer
// within a second of meeting it and about every latencyEvery after (a
// 32-byte ping each way, on an existing connection only: a probe never
// dials). A peer whose pings fail is pinged less and less often. The
// peers the liveness timeout applies to are pinged more often
// (liveness.go), on one ping stream kept per peer (pingstream.go).

const (
	latencyTick     = time.Second      // how often the prober looks for due peers
	latencyEvery    = 30 * time.Second // how often each peer is pinged, ±10 %
	latencyMaxWait  = 5 * time.Minute  // the longest wait after failed pings
	latencyTimeout  = 5 * time.Second  // a ping unanswered by then failed
	latencyParallel = 8                // pings at once
)

// Prober pings peers to keep their round trips known, and tells of the
// silent ones. Its goroutine owns the probe state of every peer.
type Prober struct {
	stop context.CancelFunc
	done chan struct{}
}

// probeState is what the prober knows of one peer.
type probeState struct {
	next     time.Time // when it is due
	fails    int       // pings failed in a row
	busy     bool      // a ping is out
	sent     time.Time // when the ping out went out
	need     bool      // the liveness timeout applies to it (liveness.go)
	alive    time.Time // the last sign of life: an answered ping went out, a message came, or need began
	received uint64    // the messages received from it, at the last look
}

type probeResult struct {
	id  libp2ppeer.ID
	err error
}

// Life is what the prober asks of a connected peer at each tick (with a
// liveness timeout): whether the timeout applies to it, and how many
// messages came from it. It must be safe for concurrent use and quick.
type Life func(libp2ppeer.ID) (need bool, received uint64)

// Start starts pinging h's peers until Close. With a liveness timeout
// (liveness > 0; liveness.go) it pings the peers life says need it as
// often as that needs, and calls gone, on the prober's goroutine, for
// each of them silent for that long: gone must not block.
func Start(h host.Host, liveness time.Duration, life Life, gone func(libp2ppeer.ID)) *Prober {
	return start(h, livenessTimes(liveness), life, gone)
}

func start(h host.Host, pt probeTimes, life Life, gone func(libp2ppeer.ID)) *Prober {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Prober{stop: cancel, done: make(chan struct{})}
	streams := newPingStreams()
	go func() {
		defer close(p.done)
		defer streams.close()
		state := map[libp2ppeer.ID]*probeState{}
		results := make(chan probeResult, latencyParallel)
		out := 0
		tick := time.NewTicker(pt.tick)
		defer tick.Stop()
		ticked := true
		for {
			now := time.Now()
			if pt.liveness > 0 && ticked {
				for id, st := range state {
					need, received := life(id)
					st.observe(need, received, now)
				}
				for _, id := range silentPeers(state, now, pt.liveness) {
					gone(id)
				}
			}
			if ticked {
				streams.prune(state, now)
			}
			ticked = false
			for _, id := range duePeers(h.Network().Peers(), state, now, latencyParallel-out) {
				out++
				timeout := pt.timeoutOf(state[id])
				go func() { results <- probeResult{id, streams.ping(ctx, h, id, timeout)} }()
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
				ticked = true
			}
		}
	}()
	return p
}

// Close stops the prober and waits for it and its pings.
func (p *Prober) Close() {
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

// settleWith is settle with the prober's times pt: a peer the liveness
// timeout applies to is pinged again pt.every later, failed or not, so
// that its silence is noticed in time; the others as settle says.
func settleWith(state map[libp2ppeer.ID]*probeState, r probeResult, now time.Time, pt probeTimes) {
	st := state[r.id]
	if st == nil {
		return
	}
	st.busy = false
	live := pt.liveness > 0 && st.need
	wait := latencyEvery
	if live {
		wait = pt.every
	}
	if r.err != nil {
		st.fails++
		if !live {
			wait = min(latencyEvery<<min(st.fails, 8), latencyMaxWait)
		}
	} else {
		st.fails = 0
		if st.sent.After(st.alive) {
			st.alive = st.sent
		}
	}
	st.next = now.Add(wait - wait/10 + rand.N(wait/5))
}

// errNoPong is a ping that ended without an answer.
var errNoPong = errors.New("latency: no answer to the ping")

// errBadPong is a ping answered with other bytes than were sent.
var errBadPong = errors.New("latency: the ping's echo differs")
