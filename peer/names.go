package peer

import (
	"context"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/peer/internal/lookup"
	"github.com/troupe-mesh/troupe/routing"
)

// CheckMesh reports whether mesh is a valid mesh name: 1–32 characters
// of a-z, 0-9 and '-', starting with a letter or digit.
func CheckMesh(mesh string) error { return discovery.CheckMesh(mesh) }

// MDNSService is the mDNS service under which the peers of mesh announce
// themselves on the LAN.
func MDNSService(mesh string) string { return discovery.ServiceName(mesh) }

// EvtPeerRestarted is emitted on the host's event bus when a connected
// peer turned out to be a new start of the same identity (see
// routing.EvtPeerRestarted): monitors of its former actors have fired.
type EvtPeerRestarted = routing.EvtPeerRestarted

// Names looked up in the DHT above the lookup threshold: internal/lookup.

// lookupAboveOption passes the node's threshold to the DHT (nil: its
// default).
func lookupAboveOption(n int) discovery.Option {
	if n <= 0 {
		return nil
	}
	return discovery.WithLookupAbove(n)
}

// lookupDHT finds name through the DHT (lookup.Finder.Find): it fails
// with an error wrapping lookup.ErrNotLarge without a DHT or below the
// threshold, or one wrapping actor.ErrNoSuchActor.
func (n *Node) lookupDHT(ctx context.Context, name string) (actor.Ref, error) {
	return n.names.Find(ctx, name)
}

// nameDHT is the DHT that name lookups ask: nil until the DHT runs, and
// without WithDHT.
func (n *Node) nameDHT() lookup.DHT {
	if n.dht == nil {
		return nil
	}
	return n.dht
}

// NameLookups returns how many name lookups this node sent to the DHT
// (zero without WithDHT).
func (n *Node) NameLookups() uint64 {
	if n.dht == nil {
		return 0
	}
	return n.dht.NameLookups()
}

// NamesProvided returns how many name records this node provided in the
// DHT (zero without WithDHT, or below the lookup threshold).
func (n *Node) NamesProvided() uint64 {
	if n.dht == nil {
		return 0
	}
	return n.dht.NamesProvided()
}
