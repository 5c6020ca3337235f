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
// ticks every connected peer instead: the latency prober (latency.go)
// pings each one every liveness/4 (±10 %), each ping answered within
// liveness/4, and a peer none of whose pings sent in the last liveness
// was answered is declared gone: its connections are closed, and the
// disconnection fires the routing's PeerDown (monitors, links, Asks
// across see actor.ErrNodeDown) through the existing path. So a silent
// peer is declared gone within liveness after its last answered ping
// went out, plus one tick of the prober (≤ 1 s): within liveness + 1 s
// of going silent.
//
// The cost, per connected peer: one ping (a new stream on the existing
// connection, 32 bytes each way, with multistream's, the muxer's and the
// security layer's framing and their TCP/IP packets: some 920 bytes of
// IP traffic, measured) every liveness/4 each way, about 7400/liveness
// bytes a second (≈ 490 B/s at the default 15 s, docs/reliability.md),
// and no dial: a probe never dials. The peers bound it: at most
// Connections.High of them.

// DefaultLiveness is the liveness timeout of a node without WithLiveness.
const DefaultLiveness = 15 * time.Second

// MinLiveness is the shortest liveness timeout WithLiveness takes.
const MinLiveness = 500 * time.Millisecond

// WithLiveness sets the liveness timeout (default DefaultLiveness): a
// connected peer that answers no ping for that long is declared gone,
// within timeout + 1 s of going silent, as if it had disconnected. Zero
// turns it off (a silent peer is then noticed by the transports'
// keepalives, some 35–40 s, and the prober pings each peer every 30 s
// for its round trip only). A timeout below MinLiveness, or negative, is
// an error wrapping ErrInvalidOption.
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
	every    time.Duration // how often each peer is pinged, ±10 %
	timeout  time.Duration // a ping unanswered by then failed
	liveness time.Duration // a peer silent that long is gone (0: never)
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

// silentPeers returns the peers of state none of whose pings sent in the
// last liveness before now was answered, and counts them alive again
// from now, so that each silence is reported once per liveness.
func silentPeers(state map[libp2ppeer.ID]*probeState, now time.Time, liveness time.Duration) []libp2ppeer.ID {
	var out []libp2ppeer.ID
	for id, st := range state {
		if now.Sub(st.alive) >= liveness {
			st.alive = now
			out = append(out, id)
		}
	}
	return out
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
	go func() {
		for _, c := range n.host.Network().ConnsToPeer(p) {
			_ = c.Close()
		}
	}()
}
