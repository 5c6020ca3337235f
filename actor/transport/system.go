package transport

import (
	"errors"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Factory builds the transport of a new system from its Port: the Remote
// for Refs of other peers (nil: they are dead letters with
// actor.ErrNoRoute) and the GroupTransport (nil: groups are local to the
// system). It runs once, inside NewSystem, before any actor exists; an
// error stops the system and NewSystem returns it. A transport may start
// taking messages (install stream handlers) before its factory returns:
// the Port's Deliver, DeliverBatch, Bounce, NewInbound, PeerDown and
// ShedSaved wait until NewSystem has returned, so that what they answer
// to other peers goes through the transport being built. The factory
// itself must therefore not call them, nor wait for goroutines that may:
// a factory that fails returns its error and stops what it started once
// NewSystem has returned (closing a routing.Router inside the factory
// would wait for stream handlers that wait for NewSystem).
type Factory func(p *Port) (Remote, GroupTransport, error)

// ErrNoFactory: NewSystem was given a nil Factory.
var ErrNoFactory = errors.New("transport: nil factory")

// NewSystem starts an actor system (as actor.New with opts) whose
// transport f builds: the transport holds the system's Port from its
// construction on, and the system holds the transport before NewSystem
// returns, so that neither is ever seen without the other.
func NewSystem(f Factory, opts ...actor.Option) (*actor.System, error) {
	if f == nil {
		return nil, ErrNoFactory
	}
	ready := make(chan struct{})
	defer close(ready) // the system holds its transport, or NewSystem failed
	return hooks.NewSystem(opts, func(s *actor.System) (any, any, error) {
		r, g, err := f(&Port{s: s, ready: ready})
		if err != nil {
			return nil, nil, err
		}
		var ra, ga any // nil interfaces stay nil
		if r != nil {
			ra = r
		}
		if g != nil {
			ga = g
		}
		return ra, ga, nil
	})
}

// SystemName lets a spawn use a name starting with '$', which is reserved
// for generated names and for Troupe's own actors (such as a peer's
// "$node"): an embedder's service actors, never an application's.
func SystemName() actor.SpawnOption { return hooks.SystemName() }

// DefaultRemoteWatchLimit is the number of monitors and links that the
// actors of one other peer may hold on a system's actors unless
// WithRemoteWatchLimit says otherwise. Each costs some 300 bytes for as
// long as the peer stays connected.
const DefaultRemoteWatchLimit = spi.DefaultRemoteWatchLimit

// WithRemoteWatchLimit caps the monitors and links between the system's
// actors and the actors of any one other peer (default
// DefaultRemoteWatchLimit), so that a peer cannot make the system hold
// them without bound. A monitor asked for beyond the cap is answered at
// once with a Down whose reason is actor.ErrSystemLimit, a link with an
// exit signal of that reason (the linking actor stops unless it traps
// exits): neither is made. Links the system's actors make count too, but
// are never refused.
func WithRemoteWatchLimit(n int) actor.Option { return hooks.RemoteWatchLimit(n) }

// DefaultRemoteWatchTotal is the number of monitors and links that the
// actors of all other peers together may hold on a system's actors unless
// WithRemoteWatchTotal says otherwise: some 100 MiB.
const DefaultRemoteWatchTotal = spi.DefaultRemoteWatchTotal

// RemoteWatchFloor is the number of watches any one peer may hold
// whatever the node-wide total (WithRemoteWatchTotal): a peer that
// monitors a few actors is never refused because others hold many.
const RemoteWatchFloor = spi.RemoteWatchFloor

// WithRemoteWatchTotal caps the monitors and links between the system's
// actors and the actors of all other peers together (default
// DefaultRemoteWatchTotal), so that many identities, each within
// WithRemoteWatchLimit, cannot make the system hold them without bound.
// At the cap a peer that holds RemoteWatchFloor or more is refused as at
// its own limit; one that holds fewer is still admitted, so that a few
// peers holding many never lock out those that watch a few.
func WithRemoteWatchTotal(n int) actor.Option { return hooks.RemoteWatchTotal(n) }

// DefaultRemoteBacklog is the most bytes of messages from one other peer
// that one actor may hold unhandled unless WithRemoteBacklog says
// otherwise.
const DefaultRemoteBacklog = spi.DefaultRemoteBacklog

// WithRemoteBacklog caps the bytes of messages from any one other peer
// (as its transport charges them to its Credit) that any one actor may
// hold unhandled, in its mailbox or saved for a later receive (default
// DefaultRemoteBacklog); an actor that holds none of a peer's takes one
// message of it however large. A message beyond the cap is a dead letter
// with actor.ErrMailboxFull (an Ask fails at once): an actor that falls
// behind, or never receives what it is sent, cannot hold its peers'
// budgets, which would pause their streams for every other actor, and one
// peer that fills it costs the others nothing.
func WithRemoteBacklog(bytes int64) actor.Option { return hooks.RemoteBacklog(bytes) }

// WithNamesChanged sets a function called after an actor with a public
// name (one not generated, see System.Names) is spawned or stops: an
// advertiser of the names can republish at once instead of polling. It
// runs on the goroutine that spawned or stopped the actor, often an event
// loop: it must be quick and must not block.
func WithNamesChanged(f func()) actor.Option { return hooks.NamesChanged(f) }
