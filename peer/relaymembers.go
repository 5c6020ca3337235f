package peer

import (
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/troupe-mesh/troupe/peer/internal/relay"
)

// A relay's limits per mesh membership live in peer/internal/relay: a
// circuit between two members of the mesh is relayed without limits, any
// other keeps the stranger limit.

// WithRelayMembers names peers a relay (WithRelayService) treats as
// members of its mesh: circuits between two members have no time or data
// limit. With a private network (WithPrivateNetwork) or an allowlist
// (WithAllowlist), every peer that can connect is a member already.
func WithRelayMembers(ids ...libp2ppeer.ID) Option {
	return func(c *config) error { c.relayMembers = append(c.relayMembers, ids...); return nil }
}

// WithRelayStrangerLimit sets the limit of a relay's circuits with a
// stranger (a peer that is not a member) at either end: at most d long
// and data bytes each way (default libp2p's: 2 minutes, 128 KiB). Both
// must be positive.
func WithRelayStrangerLimit(d time.Duration, data int64) Option {
	return func(c *config) error {
		if d <= 0 || data <= 0 {
			return invalid("relay stranger limit %v, %d bytes: both must be positive", d, data)
		}
		c.strangerLimit = &relayv2.RelayLimit{Duration: d, Data: data}
		return nil
	}
}

// RelayStats counts what a relay (WithRelayService) serves.
type RelayStats struct {
	Reservations   int64  // reservations held now
	Circuits       int64  // circuits open now
	MemberCircuits uint64 // circuits opened between two members (no limits), in total
	Cut            uint64 // stranger circuit ends cut at their limit (time or data), in total
}

// RelayStats returns what the node's relay service serves; zero without
// WithRelayService.
func (n *Node) RelayStats() RelayStats { return RelayStats(n.relaySvc.Stats()) }

// startRelayService starts cfg's relay service on h, nil without
// WithRelayService.
func startRelayService(h host.Host, cfg config) *relay.Service {
	if !cfg.relayService {
		return nil
	}
	return relay.Start(h, relay.Config{All: cfg.psk != nil || len(cfg.allow) > 0, Members: cfg.relayMembers,
		Stranger: cfg.strangerLimit, Prom: cfg.prom})
}
