package latency

import (
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Liveness. A peer that goes silent without closing its connections (a
// partition whose packets vanish, a crashed peer on QUIC) would be
// noticed only by yamux's keepalive (~40 s after the last traffic) or
// QUIC's idle timeout (~34 s). Like Erlang's net_ticktime, the node
// ticks the peers it has something pending with: those its Life says
// need the timeout (in peer: those the connection guard keeps for
// monitors or links either way, Asks in flight, messages queued for the
// peer or of the peer's not handled yet). The prober (prober.go) pings
// each of them every liveness/4 (±10 %), each ping answered within
// liveness/4, and one with no sign of life in the last liveness is
// declared gone: the node's gone func closes its connections, and the
// disconnection fires the routing's PeerDown (monitors, links, Asks across see
// actor.ErrNodeDown) through the existing path. A sign of life is an
// answered ping (as of when it went out) or, as in Erlang, a message
// from the peer: a peer whose messages arrive over a link too full for
// its pings' answers is not declared. The prober looks every
// min(1 s, liveness/8), so a silent peer is declared gone within
// liveness + 1 s of going silent, or of needing the timeout (its first
// ping goes out then). The other connected peers are pinged every 30 s
// for their round trip only, and never declared: nothing here waits on
// them, and a trimmed or silent idle connection fires no monitor.
//
// The cost, per peer the timeout applies to: one ping each way every
// liveness/4, on the peer's ping stream kept open (pingstream.go):
// 32 bytes, with the muxer's and the security layer's framing and their
// TCP/IP packets, at most ~250 bytes of IP traffic a round (~920 on a
// new stream): 2 × 4 × 250 / liveness = 2000/liveness bytes a second at
// most for the pair (both sides ping), ≤ 133 B/s at the default 15 s
// (measured 54–136: docs/reliability.md). An idle peer costs a ping on a new stream each
// way every 30 s, ≈ 61 B/s for the pair, as before the liveness timeout.
// A probe never dials.

// probeTimes are the prober's periods.
type probeTimes struct {
	tick     time.Duration // how often it looks for due and silent peers
	every    time.Duration // how often a peer that needs liveness is pinged, ±10 %
	timeout  time.Duration // a ping to it unanswered by then failed
	liveness time.Duration // such a peer silent that long is gone (0: never)
}

// latencyTimes are the prober's times without a liveness timeout.
func latencyTimes() probeTimes {
	return probeTimes{tick: latencyTick, every: latencyEvery, timeout: latencyTimeout}
}

// livenessTimes returns the prober's times for liveness timeout d (0:
// latencyTimes).
func livenessTimes(d time.Duration) probeTimes {
	if d <= 0 {
		return latencyTimes()
	}
	return probeTimes{tick: min(latencyTick, d/8), every: d / 4, timeout: d / 4, liveness: d}
}

// timeoutOf returns the timeout of a ping to the peer of st.
func (pt probeTimes) timeoutOf(st *probeState) time.Duration {
	if pt.liveness > 0 && st.need {
		return pt.timeout
	}
	return latencyTimeout
}

// observe records at now what the prober learnt of the peer at a tick:
// whether the liveness timeout applies to it (need), and the messages
// received from it. A message is a sign of life. A peer that starts to
// need the timeout starts with a full one, and is due for a ping at
// once.
func (st *probeState) observe(need bool, received uint64, now time.Time) {
	if received != st.received {
		st.received, st.alive = received, now
	}
	if need && !st.need {
		st.alive = now
		if !st.busy {
			st.next = now
		}
	}
	st.need = need
}

// silentPeers returns the peers of state that need the liveness timeout
// and showed no sign of life in the last liveness before now, and counts
// them alive again from now, so that each silence is reported once per
// liveness.
func silentPeers(state map[libp2ppeer.ID]*probeState, now time.Time, liveness time.Duration) []libp2ppeer.ID {
	var out []libp2ppeer.ID
	for id, st := range state {
		if st.need && now.Sub(st.alive) >= liveness {
			st.alive = now
			out = append(out, id)
		}
	}
	return out
}
