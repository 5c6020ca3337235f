package discovery

import (
	"context"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"strings"
	"sync"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	mh "github.com/multiformats/go-multihash"
)

// maxProviders bounds the provider records a DHT server keeps: one per
// peer of the mesh that advertises itself.
const maxProviders = 4096

// Bounds on the provider records of other keys than the rendezvous: the
// names peers provide above the lookup threshold (names.go). A key's
// hash does not say which mesh or name it is of, so these are bounded by
// provider and in total instead.
const (
	maxNameRecords  = 16384
	maxNamesPerPeer = 64
)

// errProvidersFull refuses a provider record.
var errProvidersFull = errors.New("discovery: provider records at their bound")

// meshProviders is the DHT's provider datastore: an in-memory store that
// takes the records of the mesh's rendezvous up to maxProviders, and
// those of other keys (names) up to maxNamesPerPeer per provider and
// maxNameRecords in all. A provider at its bound that provides a new
// name replaces its own record written least lately: records outlive the
// names they were put for by up to two days, and a peer whose names
// come and go would otherwise find its new names refused by the stale
// ones. The DHT's provider manager keys a record by the
// provided key's multihash and the provider (see kad-dht's records
// package: /providers/<base32 key>/<base32 peer>).
type meshProviders struct {
	ds.Batching
	prefix string // of the rendezvous's records' keys

	mu      sync.Mutex                  // serializes writes, so that the fields below stay true
	n       int                         // rendezvous records
	names   int                         // other records
	perPeer map[string]map[ds.Key]int64 // a provider's other records: when each was written
}

func newMeshProviders(rendezvous string) (*meshProviders, error) {
	// The key a RoutingDiscovery provides for a namespace: the multihash
	// of a raw CID of its SHA-256.
	h, err := mh.Sum([]byte(rendezvous), mh.SHA2_256, -1)
	if err != nil {
		return nil, err
	}
	return &meshProviders{
		Batching: dssync.MutexWrap(ds.NewMapDatastore()),
		prefix:   "/providers/" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h) + "/",
		perPeer:  make(map[string]map[ds.Key]int64),
	}, nil
}

// Put stores a provider record, within the bounds.
func (m *meshProviders) Put(ctx context.Context, key ds.Key, value []byte) error {
	rendezvous := strings.HasPrefix(key.String(), m.prefix)
	provider := key.BaseNamespace()
	m.mu.Lock()
	defer m.mu.Unlock()
	had, err := m.Batching.Has(ctx, key)
	if err != nil {
		return err
	}
	switch {
	case rendezvous:
		if !had && m.n >= maxProviders {
			return errProvidersFull
		}
	case had:
	case len(m.perPeer[provider]) >= maxNamesPerPeer:
		// Room made from the provider's own records only.
		if err := m.deleteLocked(ctx, oldest(m.perPeer[provider])); err != nil {
			return err
		}
	case m.names >= maxNameRecords:
		return errProvidersFull
	}
	if err := m.Batching.Put(ctx, key, value); err != nil {
		return err
	}
	switch {
	case rendezvous:
		if !had {
			m.n++
		}
	default:
		if !had {
			m.names++
		}
		if m.perPeer[provider] == nil {
			m.perPeer[provider] = make(map[ds.Key]int64)
		}
		// The provider manager's value is the record's write time, a
		// varint of Unix nanoseconds; a value that is none counts as
		// the oldest.
		at, _ := binary.Varint(value)
		m.perPeer[provider][key] = at
	}
	return nil
}

// oldest returns the key written least lately.
func oldest(keys map[ds.Key]int64) ds.Key {
	var (
		out   ds.Key
		outAt int64
		found bool
	)
	for k, at := range keys {
		if !found || at < outAt || (at == outAt && k.String() < out.String()) {
			out, outAt, found = k, at, true
		}
	}
	return out
}

// Delete removes a record (an expired one: the provider manager's
// collection).
func (m *meshProviders) Delete(ctx context.Context, key ds.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleteLocked(ctx, key)
}

// deleteLocked removes a record and counts it out; m.mu is held.
func (m *meshProviders) deleteLocked(ctx context.Context, key ds.Key) error {
	had, err := m.Batching.Has(ctx, key)
	if err != nil {
		return err
	}
	if err := m.Batching.Delete(ctx, key); err != nil {
		return err
	}
	if !had {
		return nil
	}
	if strings.HasPrefix(key.String(), m.prefix) {
		m.n--
		return nil
	}
	m.names--
	provider := key.BaseNamespace()
	delete(m.perPeer[provider], key)
	if len(m.perPeer[provider]) == 0 {
		delete(m.perPeer, provider)
	}
	return nil
}

// Batch returns a batch whose writes go through Put and Delete when it
// commits, so they are checked and counted. A record refused is dropped
// and the others are kept: the provider manager writes all it holds as one
// batch, and an error would have it keep and retry them all, the honest
// records with the refused one, until it drops them all.
func (m *meshProviders) Batch(context.Context) (ds.Batch, error) { return &providerBatch{m: m}, nil }

// providerBatch is a batch of writes to a meshProviders.
type providerBatch struct {
	m   *meshProviders
	ops []providerOp
}

type providerOp struct {
	key    ds.Key
	value  []byte
	delete bool
}

func (b *providerBatch) Put(_ context.Context, key ds.Key, value []byte) error {
	b.ops = append(b.ops, providerOp{key: key, value: value})
	return nil
}

func (b *providerBatch) Delete(_ context.Context, key ds.Key) error {
	b.ops = append(b.ops, providerOp{key: key, delete: true})
	return nil
}

func (b *providerBatch) Commit(ctx context.Context) error {
	for _, op := range b.ops {
		var err error
		if op.delete {
			err = b.m.Delete(ctx, op.key)
		} else {
			err = b.m.Put(ctx, op.key, op.value)
		}
		if err != nil && !errors.Is(err, errProvidersFull) {
			return err
		}
	}
	b.ops = nil
	return nil
}
