package discovery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ipfs/go-cid"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// Names found through the DHT: above the lookup threshold every peer
// provides, under the DHT key of each of its public names, a provider
// record of itself, and a lookup of a name asks the DHT for the
// providers of its key. A provider record binds the key to the peer that
// stored it (kad-dht takes an ADD_PROVIDER only from the provider
// itself), but the peers that answer GET_PROVIDERS may lie: the caller
// confirms each provider with the provider itself before it trusts it
// (peer.Node.Whereis asks the provider's $node over its authenticated
// connection).

// DefaultLookupAbove is the mesh size from which names are provided and
// looked up through the DHT (WithLookupAbove): the connection budget's
// high mark, the size up to which a mesh stays fully connected and every
// peer holds every advertisement anyway.
const DefaultLookupAbove = 32

// Bounds on the name lookups and publications.
const (
	// MaxNameProviders is the most providers a lookup of a name takes
	// from the DHT.
	MaxNameProviders = 8
	// maxProvidedNames is the most names a peer provides: the DHT servers
	// keep maxNamesPerPeer per provider.
	maxProvidedNames = maxNamesPerPeer
	// nameRepublish is how often a name's record is provided again; the
	// DHT keeps provider records for 48 h.
	nameRepublish = time.Hour
)

// NameKey is the DHT key under which the peers of mesh that host an actor
// called name provide themselves: a raw CID of the SHA-256 of
// "/troupe/<mesh>/name/<name>".
func NameKey(mesh, name string) (cid.Cid, error) {
	h, err := mh.Sum([]byte("/troupe/"+mesh+"/name/"+name), mh.SHA2_256, -1)
	if err != nil {
		return cid.Undef, err
	}
	return cid.NewCidV1(cid.Raw, h), nil
}

// Large reports whether this peer sees the mesh at or above the lookup
// threshold: its DHT routing table, plus itself, holds at least that many
// peers. Once large, the mesh stays so until the table falls below three
// quarters of the threshold (so that a table that breathes around the
// threshold does not flap). Safe for concurrent use.
func (d *DHT) Large() bool {
	n := d.kad.RoutingTable().Size() + 1
	t := d.cfg.LookupAbove
	if d.large.Load() {
		if n < t*3/4 {
			d.large.Store(false)
		}
	} else if n >= t {
		d.large.Store(true)
	}
	return d.large.Load()
}

// FindName returns up to MaxNameProviders peers that provide name in the
// DHT (not yet confirmed: see the package's notes), waiting until the
// lookup ends or ctx is done. Safe for concurrent use.
func (d *DHT) FindName(ctx context.Context, name string) ([]libp2ppeer.AddrInfo, error) {
	key, err := NameKey(d.cfg.Mesh, name)
	if err != nil {
		return nil, err
	}
	d.nameLookups.Add(1)
	var out []libp2ppeer.AddrInfo
	for ai := range d.kad.FindProvidersAsync(ctx, key, MaxNameProviders) {
		if ai.ID != d.h.ID() {
			out = append(out, ai)
		}
	}
	if len(out) == 0 && ctx.Err() != nil {
		return nil, fmt.Errorf("discovery: looking %q up: %w", name, ctx.Err())
	}
	return out, nil
}

// FindNameEach is FindName's streaming form: it calls each with the
// providers of name (at most MaxNameProviders, this peer left out) as
// the DHT finds them, on the caller's goroutine, until each returns
// false (the walk then ends), the lookup ends or ctx is done. Safe for
// concurrent use.
func (d *DHT) FindNameEach(ctx context.Context, name string, each func(libp2ppeer.AddrInfo) bool) error {
	key, err := NameKey(d.cfg.Mesh, name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx) // ends kad-dht's walk when each is done
	defer cancel()
	d.nameLookups.Add(1)
	for ai := range d.kad.FindProvidersAsync(ctx, key, MaxNameProviders) {
		if ai.ID != d.h.ID() && !each(ai) {
			return nil
		}
	}
	return nil
}

// NameLookups returns how many name lookups went to the DHT.
func (d *DHT) NameLookups() uint64 { return d.nameLookups.Load() }

// provideNames provides this peer's names (dhtConfig.Names) while the
// mesh is large: a name at once when it appears, every nameRepublish
// after, at most maxProvidedNames of them. A name that goes is not
// withdrawn (the DHT has no withdrawal); lookups confirm with the
// provider and drop it.
func (d *DHT) provideNames() {
	defer d.wg.Done()
	provided := make(map[string]time.Time)
	for d.sleep(d.cfg.NamesTick) {
		if d.cfg.Names == nil || !d.Large() {
			continue
		}
		names := d.cfg.Names()
		slices.Sort(names)
		if len(names) > maxProvidedNames {
			names = names[:maxProvidedNames]
		}
		for name, at := range provided {
			if !slices.Contains(names, name) || time.Since(at) >= nameRepublish {
				delete(provided, name)
			}
		}
		for _, name := range names {
			if _, ok := provided[name]; ok {
				continue
			}
			key, err := NameKey(d.cfg.Mesh, name)
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
			err = d.kad.Provide(ctx, key, true)
			cancel()
			if err != nil {
				d.cfg.Logger.Debug("discovery: providing a name", "name", name, "err", err)
				continue // tried again at the next tick
			}
			provided[name] = time.Now()
			d.namesProvided.Add(1)
		}
	}
}

// NamesProvided returns how many name records this peer provided.
func (d *DHT) NamesProvided() uint64 { return d.namesProvided.Load() }
