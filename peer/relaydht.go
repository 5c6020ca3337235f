package peer

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Relays found through the DHT: a node whose relay service runs (it is
// publicly reachable) provides itself under its mesh's relay key
// (discovery.RelayKey); a private node with WithRelayDiscovery and a DHT,
// connected to no relay of its mesh, looks the key up and offers what it
// finds to AutoRelay, which dials each and reserves a slot if it relays
// (a peer that claims to and does not is left alone for relayBackoff).
// In a large mesh the dial budget leaves most peers unconnected, the
// relays among them: the key finds them anyway.

// relayLookupTimeout bounds a lookup of the relay key.
const relayLookupTimeout = 10 * time.Second

// relayLookupEvery is the least time between two lookups of the relay
// key while one of AutoRelay's queries finds nothing (a node that just
// started may not have joined the DHT at the first).
const relayLookupEvery = 3 * time.Second

// inDHT returns the relays the DHT's relay key gives, or none without a
// DHT.
func (s *relaySource) inDHT(ctx context.Context) []libp2ppeer.AddrInfo {
	d := s.dht.Load()
	if d == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, relayLookupTimeout)
	defer cancel()
	found, err := d.FindRelays(ctx)
	if err != nil {
		return nil
	}
	s.fromDHT.Add(uint64(len(found)))
	return found
}

// relaying reports whether n serves as a relay now: WithRelayService,
// and publicly reachable (libp2p runs the relay then).
func (n *Node) relaying() bool {
	return n.relaySvc != nil && n.Reachability() == network.ReachabilityPublic
}
