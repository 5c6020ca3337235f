package discovery

import (
	"context"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
	mh "github.com/multiformats/go-multihash"
)

// DHTProtocolPrefix keeps Troupe's Kademlia DHT apart from the public IPFS
// DHT: its protocol is /troupe/kad/1.0.0.
const DHTProtocolPrefix = "/troupe"

// dhtConfig is a DHT's configuration, from StartDHT's arguments and
// options.
type dhtConfig struct {
	Mesh      string
	Bootstrap []libp2ppeer.AddrInfo
	Connect   func(context.Context, libp2ppeer.AddrInfo) error
	FindEvery time.Duration
	Logger    *slog.Logger
	Client    bool
	Wants     func() bool // nil: always
	// Names gives the names this peer provides above LookupAbove (nil:
	// none), looked at every NamesTick.
	Names       func() []string
	LookupAbove int
	NamesTick   time.Duration
}

// DHT finds peers beyond the LAN: a Kademlia DHT in server mode under
// Troupe's own protocol prefix, with a rendezvous on "/troupe/<mesh>" where
// every peer advertises itself and looks the others up.
type DHT struct {
	cfg dhtConfig
	h   host.Host
	kad *dht.IpfsDHT
	rd  *drouting.RoutingDiscovery

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	joinedNow chan struct{} // keepJoined joined: advertise now
	bootDials atomic.Uint64 // dials of bootstrap peers
	lookups   atomic.Uint64 // rendezvous lookups started

	large         atomic.Bool // Large's last answer
	nameLookups   atomic.Uint64
	namesProvided atomic.Uint64
}

// StartDHT joins the DHT through the bootstrap peers and starts the
// rendezvous, connecting to the peers it finds with connect (a node's
// Connect). Options: WithMesh (required), WithBootstrap, WithFindEvery,
// WithDHTClient, WithWantsPeers, WithLogger. Close stops it (before the
// host is closed).
func StartDHT(h host.Host, connect func(context.Context, libp2ppeer.AddrInfo) error, opts ...Option) (*DHT, error) {
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	cfg := dhtConfig{Mesh: o.mesh, Bootstrap: o.bootstrap, Connect: connect, FindEvery: o.findEvery, Logger: o.logger, Client: o.client,
		Wants: o.wants, Names: o.names, LookupAbove: o.lookupAbove, NamesTick: o.namesTick}
	if cfg.LookupAbove <= 0 {
		cfg.LookupAbove = DefaultLookupAbove
	}
	if cfg.NamesTick <= 0 {
		cfg.NamesTick = defaultTick
	}
	if cfg.Connect == nil {
		return nil, fmt.Errorf("discovery: DHT needs a Connect function")
	}
	if cfg.FindEvery <= 0 {
		cfg.FindEvery = time.Minute
	}
	mode := dht.ModeServer
	if cfg.Client {
		mode = dht.ModeClient
	}
	// Troupe's peers store provider records of the mesh's rendezvous and
	// of names (names.go), and nothing else: values are off, and the
	// provider store bounds the records it takes (any peer could otherwise
	// store records and values for any key, kept for hours).
	providers, err := newMeshProviders("/troupe/" + cfg.Mesh)
	if err != nil {
		return nil, fmt.Errorf("discovery: DHT: %w", err)
	}
	kopts := []dht.Option{dht.Mode(mode), dht.ProtocolPrefix(DHTProtocolPrefix), dht.DisableValues(), dht.ProviderDatastore(providers)}
	if len(cfg.Bootstrap) > 0 {
		kopts = append(kopts, dht.BootstrapPeers(cfg.Bootstrap...))
	}
	kad, err := dht.New(h, kopts...)
	if err != nil {
		return nil, fmt.Errorf("discovery: DHT: %w", err)
	}
	d := &DHT{cfg: cfg, h: h, kad: kad, rd: drouting.NewRoutingDiscovery(kad), joinedNow: make(chan struct{}, 1)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(4)
	go d.provideNames()
	go d.keepJoined()
	go d.advertise()
	go d.find()
	return d, nil
}

// Rendezvous is the DHT key the mesh's peers advertise under.
func (d *DHT) Rendezvous() string { return "/troupe/" + d.cfg.Mesh }

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

// sleep waits for d or the end of the DHT; it reports false at the end.
func (d *DHT) sleep(wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.ctx.Done():
		return false
	}
}

// advertise keeps this peer's provider record under the rendezvous fresh.
// Advertising fails until the routing table has a peer; it is retried
// with backoff, and at once when keepJoined joins.
func (d *DHT) advertise() {
	defer d.wg.Done()
	retry := 100 * time.Millisecond
	for {
		ttl, err := d.rd.Advertise(d.ctx, d.Rendezvous())
		wait := ttl * 7 / 8
		if err != nil || wait <= 0 {
			d.cfg.Logger.Debug("discovery: advertise", "err", err)
			wait, retry = retry, min(2*retry, d.cfg.FindEvery)
		} else {
			retry = 100 * time.Millisecond
		}
		// Joining again wakes only a peer that could not advertise.
		if !d.sleepUnlessJoined(wait, err != nil) {
			return
		}
	}
}

// sleepUnlessJoined is sleep, cut short when keepJoined joins if wake is
// set.
func (d *DHT) sleepUnlessJoined(wait time.Duration, wake bool) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-d.ctx.Done():
			return false
		case <-d.joinedNow:
			if wake {
				return true
			}
		}
	}
}

// find looks the rendezvous up, sooner at first, and connects to the peers
// found, while the node wants peers (dhtConfig.Wants).
func (d *DHT) find() {
	defer d.wg.Done()
	wait := min(500*time.Millisecond, d.cfg.FindEvery)
	for d.sleep(wait) {
		wait = min(2*wait, d.cfg.FindEvery)
		if d.cfg.Wants != nil && !d.cfg.Wants() {
			continue // the dial budget is full: nothing to look for
		}
		d.lookups.Add(1)
		ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
		peers, err := d.rd.FindPeers(ctx, d.Rendezvous())
		if err != nil {
			cancel()
			d.cfg.Logger.Debug("discovery: find peers", "err", err)
			continue
		}
		for found := range batches(peers, findBatch) {
			found = slices.DeleteFunc(found, func(ai libp2ppeer.AddrInfo) bool {
				return ai.ID == d.h.ID() || len(ai.Addrs) == 0 || d.h.Network().Connectedness(ai.ID) == network.Connected
			})
			// Every peer finds the same providers in much the same
			// order: dialed in that order, the first ones would take
			// every newcomer's dials, and the dial budget would leave the
			// others to nobody.
			rand.Shuffle(len(found), func(i, j int) { found[i], found[j] = found[j], found[i] })
			if !d.dialFound(ctx, found) {
				break
			}
		}
		cancel()
	}
}

// findBatch is how long the rendezvous's providers are gathered, from
// the first one, before they are dialed in random order.
const findBatch = time.Second

// batches gathers what ch yields into slices: each holds what arrived
// within wait of its first element, or until ch closed.
func batches[T any](ch <-chan T, wait time.Duration) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for {
			first, ok := <-ch
			if !ok {
				return
			}
			batch := []T{first}
			t := time.NewTimer(wait)
		gather:
			for {
				select {
				case v, ok := <-ch:
					if !ok {
						t.Stop()
						yield(batch)
						return
					}
					batch = append(batch, v)
				case <-t.C:
					break gather
				}
			}
			if !yield(batch) {
				return
			}
		}
	}
}

// dialFound connects to the peers found, in order, and reports false once
// the node's dial budget is reached (ErrDialBudget).
func (d *DHT) dialFound(ctx context.Context, found []libp2ppeer.AddrInfo) bool {
	for _, ai := range found {
		err := d.cfg.Connect(ctx, ai)
		if errors.Is(err, ErrDialBudget) {
			return false
		}
		if err != nil {
			d.cfg.Logger.Debug("discovery: DHT peer unreachable", "peer", ai.ID, "err", err)
		}
	}
	return true
}

// Close stops the rendezvous and the DHT and waits for their goroutines
// (ctx is accepted for the library's uniform Close(ctx) error: every
// goroutine here ends at once when told to, so Close waits for them
// whatever ctx says, as Router.Close does after its drain.)
func (d *DHT) Close(context.Context) error {
	d.cancel()
	d.wg.Wait()
	return d.kad.Close()
}
