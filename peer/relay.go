package peer

import (
	"sync/atomic"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
)

// Beyond the LAN: circuit relays (v2) let a node behind a NAT be reached
// through a relay it reserved a slot on, and hole punching (DCUtR)
// upgrades such a connection to a direct one when the NATs allow. A
// relayed connection carries actor traffic as a direct one does, within
// the relay's limits (none between its mesh's members; libp2p's defaults
// otherwise: 2 minutes and 128 KiB each way per circuit); a link whose stream a relay cuts declares the loss, as
// any broken stream does.

// WithRelayService makes the node a circuit relay for other peers, and
// an AutoNAT (v1 and v2) server that tells them whether they are
// reachable (default off). libp2p runs the relay once it finds the node publicly reachable,
// with its default resources: 128 reservations (one per peer), 16
// circuits per peer; a circuit between two members of the mesh has no
// limit, any other at most 2 minutes and 128 KiB each way
// (relaymembers.go, internal/relay).
func WithRelayService(on bool) Option {
	return func(c *config) error { c.relayService = on; return nil }
}

// WithAutoNATService makes the node an AutoNAT (v1) server without a
// relay: it dials back peers that ask whether they are reachable (libp2p
// bounds how many and how often). WithRelayService turns it on too. A
// bootstrap peer that is no relay can so tell a private peer that it is
// private, which it must learn before it reserves a relay slot.
func WithAutoNATService(on bool) Option {
	return func(c *config) error { c.natService = on; return nil }
}

// WithRelays gives the relays the node reserves a slot on when it is not
// publicly reachable (AutoRelay), so that others reach it through them,
// and turns hole punching and AutoNAT v2 on.
func WithRelays(relays ...libp2ppeer.AddrInfo) Option {
	return func(c *config) error { c.relays = append(c.relays, relays...); return nil }
}

// relayOptions are the libp2p options of cfg's relay settings; the
// relays to reserve on come from src.
func relayOptions(cfg config, src *relaySource) []libp2p.Option {
	var o []libp2p.Option
	if cfg.relayService {
		// The relay itself starts with the host (relaymembers.go).
		o = append(o, libp2p.EnableNATService())
	} else if cfg.natService {
		o = append(o, libp2p.EnableNATService())
	}
	if cfg.relayService || len(cfg.relays) > 0 || cfg.findRelays {
		// Beyond the LAN, AutoNAT v2 checks each address (v1, always on,
		// gives the node's reachability): a node that reserves relay
		// slots advertises its relay addresses until one of its own is
		// confirmed reachable. libp2p has no client-only v2: it also
		// answers other peers' checks (public addresses only, at most 60
		// a minute, 12 per peer) from a second, dial-back host. LAN-only
		// nodes do without.
		o = append(o, libp2p.EnableAutoNATv2())
	}
	if len(cfg.relays) > 0 || cfg.findRelays {
		// Hole punching runs outside the host (holepunch.go), so that
		// it can try again; our tracer replaces libp2p's hole punching
		// metrics: Troupe's troupe_hole_punches_total counts the same.
		src.static, src.find = cfg.relays, cfg.findRelays
		o = append(o, libp2p.EnableAutoRelayWithPeerSource(src.candidates, src.autoRelayOptions()...))
	}
	if !cfg.relay && !cfg.relayService && len(cfg.relays) == 0 && !cfg.findRelays {
		o = append(o, libp2p.DisableRelay())
	}
	return append(o, cfg.hostOpts...)
}

// punches reports whether cfg has the node punch holes (holepunch.go).
func punches(cfg config) bool { return len(cfg.relays) > 0 || cfg.findRelays }

// holePunches counts hole punches (DCUtR rounds, as either side) from
// libp2p's hole punching tracer.
type holePunches struct{ tried, succeeded atomic.Uint64 }

// Trace implements holepunch.EventTracer.
func (h *holePunches) Trace(e *holepunch.Event) {
	if end, ok := e.Evt.(*holepunch.EndHolePunchEvt); ok {
		h.tried.Add(1)
		if end.Success {
			h.succeeded.Add(1)
		}
	}
}

// HolePunches returns how many hole punches the node tried to turn a
// relayed connection into a direct one, and how many succeeded (each
// attempt of DCUtR counts: up to three per round, and a relayed
// connection gets up to five rounds, holepunch.go). Both stay 0 without
// WithRelays or WithRelayDiscovery.
func (n *Node) HolePunches() (tried, succeeded uint64) {
	return n.holePunches.tried.Load(), n.holePunches.succeeded.Load()
}

// Relayed reports whether the node is connected to peer id through
// relays only (no direct connection).
func (n *Node) Relayed(id libp2ppeer.ID) bool {
	conns := n.host.Network().ConnsToPeer(id)
	for _, c := range conns {
		if !isCircuit(c.RemoteMultiaddr()) && !c.Stat().Limited {
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
