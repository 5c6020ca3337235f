package peer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/troupe-mesh/troupe/peer/internal/metrics"
)

// Troupe's Prometheus metrics (their names and help in
// peer/internal/metrics): the node registers a collector that reads a
// Sample of its counters at each scrape.

// WithPrometheus registers the node's metrics with reg: Troupe's own
// (troupe_*: messages, dead letters, losses, the trust boundary's
// refusals, peers, actors; listed in docs/cli.md) and libp2p's (swarm,
// identify, and the other services that report to Prometheus), which
// are off otherwise. One node per registerer: a second registers the
// same names and New fails. Close unregisters Troupe's (libp2p's stay).
func WithPrometheus(reg prometheus.Registerer) Option {
	return func(c *config) error { c.prom = reg; return nil }
}

// registerMetrics registers n's collector with the registerer of
// WithPrometheus, if any.
func (n *Node) registerMetrics() error {
	if n.cfg.prom == nil {
		return nil
	}
	c := metrics.New(n.sample)
	if err := n.cfg.prom.Register(c); err != nil {
		return fmt.Errorf("peer: registering metrics: %w", err)
	}
	n.metrics = c
	return nil
}

// RemoteWatches returns the monitors and links between this node's
// actors and other peers' (what troupe_remote_watches exports).
func (n *Node) RemoteWatches() int { return n.port.RemoteWatches() }

// sample reads what the node's metrics export. Safe for concurrent use.
func (n *Node) sample() metrics.Sample {
	sys := n.System()
	s := metrics.Sample{
		Router:            n.Router().Stats(),
		DeadLetters:       sys.DeadLetters(),
		DeadLettersByKind: sys.DeadLettersByKind(),
		MailboxOverflows:  sys.MailboxOverflows(),
		Replacements:      n.port.Loops().Replacements(),
		Actors:            sys.Actors(),
		RemoteWatches:     n.port.RemoteWatches(),
		Peers:             len(n.Peers()),
	}
	if g := n.Groups(); g != nil {
		gs := g.Stats()
		s.GroupIn, s.Rejected, s.GroupExpired = gs.Received, gs.Rejected, gs.Expired
	}
	s.Rejected += n.DirectoryRejected()
	s.HolePunches, s.HolePunched = n.HolePunches()
	relay := n.RelayStats()
	s.RelayReservations, s.RelayCircuits = relay.Reservations, relay.Circuits
	s.RelayMembers, s.RelayCuts = relay.MemberCircuits, relay.Cut
	return s
}
