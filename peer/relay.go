package peer

import (
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Beyond the LAN: circuit relays (v2) let a node behind a NAT be reached
// through a relay it reserved a slot on, and hole punching (DCUtR)
// upgrades such a connection to a direct one when the NATs allow. A
// relayed connection carries actor traffic as a direct one does, within
// the relay's limits (libp2p's defaults: 2 minutes and 128 KiB each way
// per circuit); a link whose stream a relay cuts declares the loss, as
// any broken stream does.

// WithRelayService makes the node a circuit relay for other peers, and
// an AutoNAT server that tells them whether they are reachable (default
// off). libp2p runs the relay once it finds the node publicly reachable,
// with its default resources: 128 reservations (one per peer), 16
// circuits, each at most 2 minutes and 128 KiB each way.
func WithRelayService(on bool) Option {
	return func(c *config) error { c.relayService = on; return nil }
}

// WithRelays gives the relays the node reserves a slot on when it is not
// publicly reachable (AutoRelay), so that others reach it through them,
// and turns hole punching on.
func WithRelays(relays ...libp2ppeer.AddrInfo) Option {
	return func(c *config) error { c.relays = append(c.relays, relays...); return nil }
}

// relayOptions are the libp2p options of cfg's relay settings.
func relayOptions(cfg config) []libp2p.Option {
	var o []libp2p.Option
	if cfg.relayService {
		o = append(o, libp2p.EnableRelayService(), libp2p.EnableNATService())
	}
	if len(cfg.relays) > 0 {
		o = append(o, libp2p.EnableAutoRelayWithStaticRelays(cfg.relays), libp2p.EnableHolePunching())
	}
	if !cfg.relay && !cfg.relayService && len(cfg.relays) == 0 {
		o = append(o, libp2p.DisableRelay())
	}
	return append(o, cfg.hostOpts...)
}

// Relayed reports whether the node is connected to peer id through
// relays only (no direct connection).
func (n *Node) Relayed(id libp2ppeer.ID) bool {
	conns := n.host.Network().ConnsToPeer(id)
	for _, c := range conns {
		if _, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT); err != nil && !c.Stat().Limited {
			return false
		}
	}
	return len(conns) > 0
}

// Reachability is what the node learned of whether others can dial it
// (AutoNAT): public, private, or unknown until it learns.
func (n *Node) Reachability() network.Reachability {
	if h, ok := n.host.(interface{ Reachability() network.Reachability }); ok {
		return h.Reachability()
	}
	return network.ReachabilityUnknown
}
