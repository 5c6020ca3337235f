package lookup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
)

// Names found by DHT lookup, above the lookup threshold (peer.WithLookupAbove):
// peer.Node.Whereis asks the DHT for the providers of the name's key and confirms
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

// DHT is what a lookup asks of the node's DHT.
type DHT interface {
	// Large reports whether the mesh is above the lookup threshold.
	Large() bool
	// FindNameEach calls each with the providers of name's key as they
	// are found, until each returns false, the walk ends or ctx is done.
	FindNameEach(ctx context.Context, name string, each func(libp2ppeer.AddrInfo) bool) error
}

// Config is what the lookups need of their node.
type Config struct {
	// DHT returns the node's DHT, or nil when it runs none (yet).
	DHT func() DHT
	// Connect connects to a provider (the host's Connect).
	Connect func(context.Context, libp2ppeer.AddrInfo) error
	// Ask asks peer id's $node whether it hosts name (peer.Node.Lookup).
	Ask func(ctx context.Context, id libp2ppeer.ID, name string) (actor.Ref, error)
}

// Finder finds names through the DHT, and caches its answers. Safe for
// concurrent use.
type Finder struct {
	cfg   Config
	names *nameCache
	// slots bounds the lookups in flight.
	slots chan struct{}
}

// New returns a Finder that uses what cfg gives.
func New(cfg Config) *Finder {
	return &Finder{cfg: cfg, names: newNameCache(nameCacheSize), slots: make(chan struct{}, lookupsAtOnce)}
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

// ErrNotLarge says the node runs no DHT or the mesh is below the lookup
// threshold: its directory is replicated, and the DHT has no name
// records.
var ErrNotLarge = errors.New("lookup: mesh below the lookup threshold")

// Find finds name through the DHT: from the cache, or by asking the
// DHT for its providers and confirming them one at a time as they are
// found, within
// lookupTimeout (confirmTime each), at most lookupsAtOnce at a time. It
// fails with ErrNotLarge without a DHT or below the threshold, or an
// error wrapping actor.ErrNoSuchActor.
func (f *Finder) Find(ctx context.Context, name string) (actor.Ref, error) {
	dht := f.cfg.DHT()
	if dht == nil || !dht.Large() {
		return actor.Ref{}, ErrNotLarge
	}
	if ref, ok := f.names.get(name); ok {
		if ref.IsZero() {
			return actor.Ref{}, fmt.Errorf("%w: %q (looked up lately)", actor.ErrNoSuchActor, name)
		}
		return ref, nil
	}
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	case <-ctx.Done():
		return actor.Ref{}, ctx.Err()
	}
	if ref, ok := f.names.get(name); ok && !ref.IsZero() { // found while this one waited
		return ref, nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	// Each provider is confirmed as the walk finds it, and the first one
	// confirmed ends the walk: waiting for the walk's end first (for
	// MaxNameProviders that a name with one host never has) held a
	// lookup slot up to lookupTimeout while the mesh formed.
	var (
		n     int
		found actor.Ref
	)
	err := dht.FindNameEach(ctx, name, func(ai libp2ppeer.AddrInfo) bool {
		n++
		ref, err := f.confirm(ctx, ai, name)
		if err == nil {
			found = ref
		}
		return err != nil && ctx.Err() == nil
	})
	switch {
	case err != nil:
		return actor.Ref{}, err
	case !found.IsZero():
		f.names.put(name, found)
		return found, nil
	case ctx.Err() != nil:
		return actor.Ref{}, fmt.Errorf("lookup: %q: %w", name, ctx.Err())
	}
	f.names.put(name, actor.Ref{})
	return actor.Ref{}, fmt.Errorf("%w: %q on none of %d providers", actor.ErrNoSuchActor, name, n)
}

// confirm asks the provider ai whether it hosts name: the answer comes
// from ai's own $node, and the Ref is ai's.
func (f *Finder) confirm(ctx context.Context, ai libp2ppeer.AddrInfo, name string) (actor.Ref, error) {
	ctx, cancel := context.WithTimeout(ctx, confirmTime)
	defer cancel()
	if len(ai.Addrs) > 0 {
		if err := f.cfg.Connect(ctx, ai); err != nil {
			return actor.Ref{}, err
		}
	}
	return f.cfg.Ask(ctx, ai.ID, name)
}
