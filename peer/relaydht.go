package peer

import (
	"context"
	"sync"
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
// key while AutoRelay finds nothing (a node that just started may not
// have joined the DHT at the first).
const relayLookupEvery = 3 * time.Second

// relayLookupMax is the longest wait between two lookups of the relay
// key: the wait doubles from relayLookupEvery after each that finds
// nothing, and starts again from it after one that finds a relay. Every
// private node of a mesh with no relay looks the same key up, so its
// closest DHT peers would otherwise take a lookup from each of them
// every few seconds, for as long as there is none.
const relayLookupMax = 5 * time.Minute

// lookupBackoff spaces a node's lookups of the relay key (times are
// given: a pure core). Safe for concurrent use.
type lookupBackoff struct {
	mu   sync.Mutex // guards the fields below
	next time.Time  // no lookup starts before
	wait time.Duration
}

// start reports whether a lookup may start at now, and if so counts it
// as started.
func (b *lookupBackoff) start(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.next) {
		return false
	}
	if b.wait == 0 {
		b.wait = relayLookupEvery
	}
	b.next = now.Add(b.wait)
	return true
}

// done records how many relays a lookup found.
func (b *lookupBackoff) done(found int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if found > 0 {
		b.wait = relayLookupEvery
		return
	}
	b.wait = min(2*max(b.wait, relayLookupEvery), relayLookupMax)
}

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
	s.lookups.done(len(found))
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
