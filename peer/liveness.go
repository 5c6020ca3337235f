package peer

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Liveness. A peer that goes silent without closing its connections (a
// partition whose packets vanish, a crashed peer on QUIC) would be
// noticed only by yamux's keepalive (~40 s after the last traffic) or
// QUIC's idle timeout (~34 s). Like Erlang's net_ticktime, the node
// ticks the peers it has something pending with: those the connection
// guard's protection (protect.go) keeps for livenessReasons — monitors
// or links either way, Asks in flight, messages queued for the peer or
// of the peer's not handled yet. The latency prober (latency.go) pings
// each of them every liveness/4 (±10 %), each ping answered within
// liveness/4, and one with no sign of life in the last liveness is
// declared gone: its connections are closed, and the disconnection
// fires the routing's PeerDown (monitors, links, Asks across see
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

// livenessReasons are the reasons to keep a connection (protect.go)
// that make the liveness timeout apply to the peer.
const livenessReasons = protEdges | protBusy | protHeld

// DefaultLiveness is the liveness timeout of a node without WithLiveness.
const DefaultLiveness = 15 * time.Second

// MinLiveness is the shortest liveness timeout WithLiveness takes.
const MinLiveness = 500 * time.Millisecond

// WithLiveness sets the liveness timeout (default DefaultLiveness): a
// connected peer something here waits on (a monitor or link either way,
// an Ask, messages queued) that answers no ping and sends no message for
// that long is declared gone, within timeout + 1 s of going silent, as
// if it had disconnected. Zero turns it off (a silent peer is then
// noticed by the transports' keepalives, some 35–40 s). Either way the
// prober pings every peer every 30 s for its round trip. A timeout below
// MinLiveness, or negative, is an error wrapping ErrInvalidOption.
func WithLiveness(timeout time.Duration) Option {
	return func(cfg *config) error {
		if timeout != 0 && timeout < MinLiveness {
			return invalid("liveness %v: at least %v, or 0 for none", timeout, MinLiveness)
		}
		cfg.liveness, cfg.livenessSet = timeout, true
		return nil
	}
}

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

// life is the prober's peerLife: the liveness timeout applies to p if the
// guard's protection keeps it for livenessReasons. Safe for concurrent
// use.
func (n *Node) life(p libp2ppeer.ID) (need bool, received uint64) {
	f := n.guard.workFacts(p)
	r, _ := protection(peerMark{}, f, time.Now(), 0) // no grace: recent traffic alone is no reason
	return r&livenessReasons != 0, f.activity.Received
}

// silent declares connected peer p gone: the prober found it silent for
// the liveness timeout. Its connections are closed (off the prober's
// goroutine: a close may wait for a stuck connection's writes), which
// the routing turns into PeerDown, and the redialer dials it again.
func (n *Node) silent(p libp2ppeer.ID) {
	if n.closing.Load() || n.host.Network().Connectedness(p) != network.Connected {
		return
	}
	n.cfg.logger.Info("peer: a silent peer is declared gone", "peer", p, "liveness", n.cfg.liveness)
	n.redial.declared(p)
	n.redial.goClose(p)
}
