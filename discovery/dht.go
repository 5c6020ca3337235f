package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
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
	Relays      func() bool // provide the relay key while true (dht_relays.go); nil: never
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

	relaysProvided atomic.Uint64 // dht_relays.go
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
		Wants: o.wants, Names: o.names, LookupAbove: o.lookupAbove, NamesTick: o.namesTick, Relays: o.relays}
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
	// kad-dht's own refresh is off (DisableAutoRefresh): it walks every
	// bucket when it starts, on each change of this host's addresses and
	// whenever its table gets peers after running low (its one refresh
	// when its bootstrap phase ends stays). In a mesh of 100 peers
	// forming on two cores those walks were most of the dials a minute
	// after the start, and asks waited behind them (docs/benchmarks.md).
	// refreshTable refreshes instead, and keepJoined at each join.
	kopts := []dht.Option{dht.Mode(mode), dht.ProtocolPrefix(DHTProtocolPrefix), dht.DisableValues(), dht.ProviderDatastore(providers),
		dht.DisableAutoRefresh(), dht.Concurrency(dhtAlpha)}
	if len(cfg.Bootstrap) > 0 {
		kopts = append(kopts, dht.BootstrapPeers(cfg.Bootstrap...))
	}
	kad, err := dht.New(h, kopts...)
	if err != nil {
		return nil, fmt.Errorf("discovery: DHT: %w", err)
	}
	d := &DHT{cfg: cfg, h: h, kad: kad, rd: drouting.NewRoutingDiscovery(kad), joinedNow: make(chan struct{}, 1)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(6)
	go d.refreshTable()
	go d.provideRelay()
	go d.provideNames()
	go d.keepJoined()
	go d.advertise()
	go d.find()
	return d, nil
}

// dhtAlpha is how many peers a DHT walk queries at once (kad-dht's α,
// 10 by default). A walk ends once the 3 closest peers it heard of
// (kad-dht's β) have answered; with 10 queries in flight it has asked
// some 10–20 peers by then, each a dial when not connected, and in a
// 100-peer mesh the walks' dials were 70–79 % of the connections opened
// after the start (docs/scale.md, "The connection budget"). With 3 a
// walk asks fewer peers beyond those it needs, for a few more round
// trips. kad-dht also derives from α how long a routing table peer may
// go unqueried before a refresh pings it, and evicts it if it does not
// answer: log(1/k)/log(1-α/k) refresh periods, 43 min at α = 10 and
// 3 h 4 min at 3, so a peer that left stays in the table longer unless
// a walk's failed dial removes it (docs/scale.md).
const dhtAlpha = 3

// refreshEvery is how often, at the least, the DHT refreshes its routing
// table: kad-dht's own period, which is also how old a bucket must be for
// a refresh to walk it.
const refreshEvery = 10 * time.Minute

// refreshOnMove is the least time after a refresh before a change of this
// host's addresses makes another (at start they change every few
// seconds: observed addresses, AutoNAT, relays).
const refreshOnMove = 5 * time.Minute

// refreshTable refreshes the routing table once it holds a peer (a join,
// or mDNS, fills it), then every refreshEvery plus up to half of it
// (jittered so that peers started together do not walk together), and
// after a change of this host's addresses once refreshOnMove has passed,
// so that the peers nearest this one hear of its new addresses: what
// kad-dht's own refresh did, without its walks at every start, end of
// bootstrap and address change.
func (d *DHT) refreshTable() {
	defer d.wg.Done()
	// The subscription is read at all times: libp2p's event bus blocks
	// the emitter while a subscriber's buffer is full.
	moved, err := d.h.EventBus().Subscribe(new(event.EvtLocalAddressesUpdated))
	if err != nil {
		d.cfg.Logger.Warn("discovery: no address events: the DHT refreshes on its timer only", "err", err)
	} else {
		defer moved.Close()
	}
	var (
		pending <-chan error // the refresh in flight
		last    time.Time    // when it started
		ready   bool         // the table has held a peer
	)
	start := func() {
		if pending == nil {
			pending, last = d.kad.RefreshRoutingTable(), time.Now()
		}
	}
	next := time.NewTimer(joinedCheck)
	defer next.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-chanOf(moved):
			if ready && time.Since(last) >= refreshOnMove {
				start()
			}
		case err := <-pending:
			pending = nil
			if err != nil {
				d.cfg.Logger.Debug("discovery: refreshing the routing table", "err", err)
			}
		case <-next.C:
			if !ready && d.kad.RoutingTable().Size() == 0 {
				next.Reset(joinedCheck)
				continue
			}
			ready = true
			start()
			next.Reset(refreshEvery + rand.N(refreshEvery/2))
		}
	}
}

// chanOf is s's channel, or nil (never ready) without a subscription.
func chanOf(s event.Subscription) <-chan any {
	if s == nil {
		return nil
	}
	return s.Out()
}

// Rendezvous is the DHT key the mesh's peers advertise under.
func (d *DHT) Rendezvous() string { return "/troupe/" + d.cfg.Mesh }

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
