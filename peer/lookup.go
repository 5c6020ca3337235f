package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
)

// Names found by DHT lookup, above the lookup threshold (WithLookupAbove):
// Whereis asks the DHT for the providers of the name's key and confirms
// each with the provider itself, whose $node answers over the connection
// that authenticates it; a provider that does not host the name (a stale
// record, or a peer that provides names it does not host) is passed
// over, and no peer can answer for another (the Ref is made of the
// provider's own ID). Answers, found or not, are cached for a while.

// Bounds of the lookups and their cache.
const (
	nameCacheSize = 1024             // names cached
	nameFoundTTL  = 30 * time.Second // a name found is trusted this long
	nameMissTTL   = 5 * time.Second  // a name not found is not looked up again before
	lookupTimeout = 5 * time.Second  // a whole DHT lookup, providers confirmed
	confirmTime   = 2 * time.Second  // confirming one provider
	// lookupsAtOnce is the most DHT lookups in flight; more wait for a
	// slot. Each may dial up to discovery.MaxNameProviders peers the DHT
	// named, one at a time, so this bounds those dials too.
	lookupsAtOnce = 4
)

// lookupAboveOption passes the node's threshold to the DHT (nil: its
// default).
func lookupAboveOption(n int) discovery.Option {
	if n <= 0 {
		return nil
	}
	return discovery.WithLookupAbove(n)
}

// nameCache holds the answers of DHT lookups, positive and negative, each
// until its TTL, at most size of them. Safe for concurrent use.
type nameCache struct {
	size int
	now  func() time.Time

	mu      sync.Mutex // guards entries
	entries map[string]nameEntry
}

type nameEntry struct {
	ref     actor.Ref // zero: not found
	expires time.Time
}

func newNameCache(size int) *nameCache {
	return &nameCache{size: size, now: time.Now, entries: make(map[string]nameEntry)}
}

// get returns the cached answer for name: its Ref (zero when it was not
// found) and whether one is cached.
func (c *nameCache) get(name string) (actor.Ref, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[name]
	if !ok {
		return actor.Ref{}, false
	}
	if !c.now().Before(e.expires) {
		delete(c.entries, name)
		return actor.Ref{}, false
	}
	return e.ref, true
}

// put caches an answer (a zero ref: not found), making room by dropping
// the expired entries, or else any one.
func (c *nameCache) put(name string, ref actor.Ref) {
	ttl := nameFoundTTL
	if ref.IsZero() {
		ttl = nameMissTTL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[name]; !ok && len(c.entries) >= c.size {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.size {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[name] = nameEntry{ref: ref, expires: now.Add(ttl)}
}

// drop forgets name (its Ref turned out to be stale).
func (c *nameCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, name)
}

// errNotLarge says the mesh is below the lookup threshold: its directory
// is replicated, and the DHT has no name records.
var errNotLarge = errors.New("peer: mesh below the lookup threshold")

// lookupDHT finds name through the DHT: from the cache, or by asking the
// DHT for its providers and confirming them one at a time, within
// lookupTimeout (confirmTime each), at most lookupsAtOnce at a time. It fails with errNotLarge below the
// threshold, or an error wrapping actor.ErrNoSuchActor.
func (n *Node) lookupDHT(ctx context.Context, name string) (actor.Ref, error) {
	if n.dht == nil || !n.dht.Large() {
		return actor.Ref{}, errNotLarge
	}
	if ref, ok := n.names.get(name); ok {
		if ref.IsZero() {
			return actor.Ref{}, fmt.Errorf("%w: %q (looked up lately)", actor.ErrNoSuchActor, name)
		}
		return ref, nil
	}
	select {
	case n.lookupSlots <- struct{}{}:
		defer func() { <-n.lookupSlots }()
	case <-ctx.Done():
		return actor.Ref{}, ctx.Err()
	}
	if ref, ok := n.names.get(name); ok && !ref.IsZero() { // found while this one waited
		return ref, nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	providers, err := n.dht.FindName(ctx, name)
	if err != nil {
		return actor.Ref{}, err
	}
	for _, ai := range providers {
		if ref, err := n.confirm(ctx, ai, name); err == nil {
			n.names.put(name, ref)
			return ref, nil
		}
		if ctx.Err() != nil {
			return actor.Ref{}, ctx.Err()
		}
	}
	n.names.put(name, actor.Ref{})
	return actor.Ref{}, fmt.Errorf("%w: %q on none of %d providers", actor.ErrNoSuchActor, name, len(providers))
}

// confirm asks the provider ai whether it hosts name: the answer comes
// from ai's own $node, and the Ref is ai's.
func (n *Node) confirm(ctx context.Context, ai libp2ppeer.AddrInfo, name string) (actor.Ref, error) {
	ctx, cancel := context.WithTimeout(ctx, confirmTime)
	defer cancel()
	if len(ai.Addrs) > 0 {
		if err := n.host.Connect(ctx, ai); err != nil {
			return actor.Ref{}, err
		}
	}
	return n.Lookup(ctx, ai.ID, name)
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
