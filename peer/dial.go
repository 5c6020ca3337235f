package peer

import (
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

// quicAfter is how long a dial waits for a TCP connection before it tries
// the peer's QUIC addresses too.
const quicAfter = 250 * time.Millisecond

// tcpFirst ranks a peer's addresses for dialing as libp2p's default ranker
// does, except that direct TCP addresses go first and direct QUIC ones
// wait quicAfter behind them (libp2p's ranker prefers QUIC). Troupe
// prefers TCP between peers for what an actor mesh needs: the kernel of a
// peer whose process dies resets its TCP connections, so monitors of its
// actors fire with actor.ErrNodeDown at once, whereas a QUIC connection to
// it looks alive until its 30 s idle timeout; and on loopback and LANs a
// TCP stream carries about twice what a QUIC one does. QUIC stays the
// fallback for peers that TCP cannot reach.
func tcpFirst(addrs []ma.Multiaddr) []network.AddrDelay {
	ranked := swarm.DefaultDialRanker(addrs)
	var tcp0, tcp1, quic0 time.Duration = -1, 0, -1 // first and last TCP delay, first QUIC delay
	for _, a := range ranked {
		switch transportOf(a.Addr) {
		case ma.P_TCP:
			if tcp0 < 0 || a.Delay < tcp0 {
				tcp0 = a.Delay
			}
			tcp1 = max(tcp1, a.Delay)
		case ma.P_QUIC_V1:
			if quic0 < 0 || a.Delay < quic0 {
				quic0 = a.Delay
			}
		}
	}
	if tcp0 < 0 || quic0 < 0 {
		return ranked
	}
	for i, a := range ranked {
		switch transportOf(a.Addr) {
		case ma.P_TCP: // the same spacing, from the start
			ranked[i].Delay -= tcp0
		case ma.P_QUIC_V1: // the same spacing, after the last TCP dial
			ranked[i].Delay = tcp1 - tcp0 + quicAfter + a.Delay - quic0
		}
	}
	slices.SortStableFunc(ranked, func(a, b network.AddrDelay) int { return int(a.Delay - b.Delay) })
	return ranked
}

// transportOf returns ma.P_TCP for a direct TCP address, ma.P_QUIC_V1 for
// a direct QUIC one (WebTransport included) and 0 for anything else
// (relayed addresses among them).
func transportOf(a ma.Multiaddr) int {
	quic := false
	for _, c := range a {
		switch c.Code() {
		case ma.P_CIRCUIT:
			return 0
		case ma.P_QUIC_V1:
			quic = true
		}
	}
	switch {
	case quic:
		return ma.P_QUIC_V1
	case slices.ContainsFunc(a, func(c ma.Component) bool { return c.Code() == ma.P_TCP }):
		return ma.P_TCP
	}
	return 0
}
