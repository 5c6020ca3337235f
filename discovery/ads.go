package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Limits on an advertisement; larger ones are rejected.
const (
	MaxAdBytes  = 64 << 10
	MaxAdNames  = 1000 // actor names, and group names
	MaxAdAddrs  = 32
	defaultTTL  = 90 * time.Second
	defaultTick = 2 * time.Second
)

// ErrBadAd reports an advertisement that is malformed, oversize, unsigned,
// or signed by another peer than the one it describes or came from.
var ErrBadAd = errors.New("discovery: bad advertisement")

// Advertisement is what a peer says it hosts (JXTA's peer advertisement):
// its public actors, its groups and its addresses. Field keys are stable.
type Advertisement struct {
	Peer        []byte   `cbor:"1,keyasint"`           // peer ID bytes
	Incarnation uint64   `cbor:"2,keyasint"`           // the peer's number for this start; Seq counts within it
	Seq         uint64   `cbor:"3,keyasint"`           // grows with each publication
	Actors      []string `cbor:"4,keyasint,omitempty"` // names of its public actors, at most MaxAdNames
	Groups      []string `cbor:"5,keyasint,omitempty"` // groups it has members in, at most MaxAdNames
	Addrs       []string `cbor:"6,keyasint,omitempty"` // its host's multiaddrs as text, at most MaxAdAddrs
	TTLSeconds  uint32   `cbor:"7,keyasint"`           // seconds others keep it; it is republished every third of that
	Relay       bool     `cbor:"8,keyasint,omitempty"` // it serves as a circuit relay for the mesh
	// Global lists the mesh-wide names it claims, at most MaxAdGlobal,
	// each for one of its own actors (see peer.Node.ClaimGlobal).
	Global []GlobalClaim `cbor:"9,keyasint,omitempty"`
}

// GlobalClaim is a peer's claim of a mesh-wide name for one of its actors;
// the advertisement that carries it is signed by that peer.
type GlobalClaim struct {
	Name  string `cbor:"1,keyasint"` // the mesh-wide name
	Actor string `cbor:"2,keyasint"` // the local name of the claiming actor on the advertising peer
}

// MaxAdGlobal is the most mesh-wide names one advertisement claims.
const MaxAdGlobal = 16

// ClaimSource says which mesh-wide names this peer claims now.
type ClaimSource func() []GlobalClaim

// AdSource says what this peer hosts now.
type AdSource func() (actors, groups []string)

// adsConfig is a Directory's configuration, from StartAds's arguments
// and options.
type adsConfig struct {
	Mesh        string
	PubSub      *pubsub.PubSub
	Incarnation uint64
	Source      AdSource
	TTL, Tick   time.Duration
	Logger      *slog.Logger
	Relay       bool
	Claims      ClaimSource // nil: none
	// Departed says whether a peer that disconnected left (nil: always).
	Departed func(libp2ppeer.ID) bool
	// Large says whether the mesh is above the lookup threshold (nil:
	// never): the directory is then narrow (ads_scope.go).
	Large func() bool
}

// adEntry is an advertisement held, with its signed bytes as its origin
// published them (to pass on in directory exchanges).
type adEntry struct {
	ad         *Advertisement
	raw        []byte
	expires    time.Time
	refreshing bool // its origin was asked for a newer one
	// via is the peer that relayed it when it came second-hand (a third
	// peer's directory exchange, or gossip forwarded by another than its
	// origin), "" when its own peer sent it: see ads_relayed.go.
	via libp2ppeer.ID
}

// Directory advertises this peer on the mesh's advertisement topic and
// keeps the advertisements of the others until they expire or their peer
// disconnects. Its methods are safe for concurrent use.
type Directory struct {
	cfg   adsConfig
	h     host.Host
	topic *pubsub.Topic

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	kick    chan struct{}
	force   atomic.Bool // republish at the next poll even if nothing changed
	syncq   chan libp2ppeer.ID
	pullNow chan struct{}
	serving chan struct{} // a token per directory request being answered

	mu    sync.Mutex // guards peers, bytes, gone, closed, answering, updated and relayed
	peers map[libp2ppeer.ID]adEntry
	// relayed holds, by relaying peer, the peers of the second-hand
	// entries charged to it (see ads_relayed.go).
	relayed map[libp2ppeer.ID]map[libp2ppeer.ID]struct{}
	// updated, made when someone waits (Updated), is closed and dropped
	// when an advertisement is stored.
	updated chan struct{}
	bytes   int // signed bytes of the advertisements in peers
	// gone holds when peers disconnected, with the advertisement then
	// held: one of theirs relayed by a third peer is refused for its TTL
	// after that, unless it is newer (see departed).
	gone   map[libp2ppeer.ID]goneEntry
	closed bool // no more directory requests are answered
	// answering holds the peers whose directory request is being answered
	// (one at a time each).
	answering map[libp2ppeer.ID]bool

	own atomic.Pointer[adEntry] // our latest published advertisement
	// narrow is collect's last judgement of the mesh: large, so off the
	// topic and holding connected peers' advertisements only.
	narrow atomic.Bool

	seq                      atomic.Uint64
	rejected, synced, forced atomic.Uint64
	syncBusy                 atomic.Uint64
	gossiped, expired        atomic.Uint64
	relayRefused             atomic.Uint64
	joins, leaves, narrowed  atomic.Uint64
}

// StartAds starts advertising, on ps (which carries the mesh's
// advertisement topic, /troupe/<mesh>/ads), what source gives, and
// collecting the others' advertisements. Options: WithMesh (required),
// WithIncarnation, WithAdTTL, WithAdTick, WithRelayAd, WithDeparture,
// WithLargeMesh, WithLogger.
func StartAds(h host.Host, ps *pubsub.PubSub, source AdSource, opts ...Option) (*Directory, error) {
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	cfg := adsConfig{Mesh: o.mesh, PubSub: ps, Incarnation: o.incarnation, Source: source, TTL: o.ttl, Tick: o.tick, Logger: o.logger, Relay: o.relay,
		Departed: o.departed, Claims: o.claims, Large: o.large}
	if cfg.PubSub == nil || cfg.Source == nil {
		return nil, errors.New("discovery: advertisements need a pubsub and a source")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = defaultTTL
	}
	if cfg.Tick <= 0 {
		cfg.Tick = defaultTick
	}
	d := &Directory{
		cfg: cfg, h: h, peers: make(map[libp2ppeer.ID]adEntry), kick: make(chan struct{}, 1),
		syncq: make(chan libp2ppeer.ID, syncQueue), serving: make(chan struct{}, syncServing),
		pullNow: make(chan struct{}, 1), gone: make(map[libp2ppeer.ID]goneEntry),
	}
	name := AdsTopic(cfg.Mesh)
	err = cfg.PubSub.RegisterTopicValidator(name, func(_ context.Context, _ libp2ppeer.ID, m *pubsub.Message) pubsub.ValidationResult {
		origin, err := libp2ppeer.IDFromBytes(m.From)
		if err != nil {
			d.rejected.Add(1)
			return pubsub.ValidationReject
		}
		if ad := d.holds(origin, m.Data); ad != nil {
			m.ValidatorData = ad // a copy of what we verified already
			return pubsub.ValidationAccept
		}
		ad, err := Verify(m.Data, origin)
		if err != nil {
			d.rejected.Add(1)
			cfg.Logger.Debug("discovery: advertisement rejected", "from", origin, "err", err)
			return pubsub.ValidationReject
		}
		m.ValidatorData = ad
		return pubsub.ValidationAccept
	})
	if err != nil {
		return nil, err
	}
	var sub *pubsub.Subscription // collect's from then on (ads_scope.go)
	if d.topic, err = cfg.PubSub.Join(name); err == nil {
		sub, err = d.topic.Subscribe()
	}
	if err != nil {
		_ = cfg.PubSub.UnregisterTopicValidator(name)
		return nil, fmt.Errorf("discovery: advertisements: %w", err)
	}
	fail := func(err error) (*Directory, error) {
		sub.Cancel()
		_ = d.topic.Close()
		_ = cfg.PubSub.UnregisterTopicValidator(name)
		return nil, fmt.Errorf("discovery: advertisements: %w", err)
	}
	topicEvents, err := d.topic.EventHandler()
	if err != nil {
		return fail(err)
	}
	events, err := h.EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
	if err != nil {
		topicEvents.Cancel()
		return fail(err)
	}
	identified, err := h.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted))
	if err != nil {
		topicEvents.Cancel()
		_ = events.Close()
		return fail(err)
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	h.SetStreamHandler(SyncProtocol(cfg.Mesh), d.serveSync)
	d.wg.Add(6 + syncWorkers)
	go d.pull()
	go d.advertise()
	go d.collect(sub)
	go d.expire(events)
	go d.watchTopic(topicEvents)
	go d.watchIdentify(identified)
	for range syncWorkers {
		go d.syncWorker()
	}
	return d, nil
}

// Changed asks for a new advertisement soon (the actors or groups changed).
func (d *Directory) Changed() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// advertise publishes our advertisement when what we host changed, when a
// third of its TTL has passed, and (forced, at most once per second) when
// the topic gains its first peer: what was published before reached nobody.
// A poll costs Source and a comparison; nothing is signed unless it
// publishes.
func (d *Directory) advertise() {
	defer d.wg.Done()
	tick := time.NewTicker(d.cfg.Tick)
	defer tick.Stop()
	var (
		lastActors, lastGroups []string
		lastAddrs              []ma.Multiaddr
		lastClaims             []GlobalClaim
		lastAt, lastForced     time.Time
		published              bool
		forceC                 <-chan time.Time
	)
	for {
		actors, groups := d.cfg.Source()
		actors, groups = capNames(actors), capNames(groups)
		var claims []GlobalClaim
		if d.cfg.Claims != nil {
			if claims = d.cfg.Claims(); len(claims) > MaxAdGlobal {
				claims = claims[:MaxAdGlobal]
			}
		}
		addrs := d.h.Addrs()
		if len(addrs) > MaxAdAddrs {
			addrs = addrs[:MaxAdAddrs]
		}
		changed := !published || !slices.Equal(actors, lastActors) || !slices.Equal(groups, lastGroups) ||
			!slices.EqualFunc(addrs, lastAddrs, ma.Multiaddr.Equal) || !slices.Equal(claims, lastClaims)
		force := false
		if d.force.Load() {
			if wait := time.Until(lastForced.Add(forceInterval)); wait > 0 {
				if forceC == nil {
					forceC = time.After(wait)
				}
			} else {
				d.force.Store(false)
				force = true
			}
		}
		if changed || force || time.Since(lastAt) >= d.cfg.TTL/3 {
			if err := d.publishAd(actors, groups, addrs, claims); err != nil {
				d.cfg.Logger.Debug("discovery: advertisement not published", "err", err)
			} else {
				lastActors, lastGroups, lastAddrs, lastClaims, published = actors, groups, addrs, claims, true
				lastAt = time.Now()
				if force {
					lastForced = lastAt
					d.forced.Add(1)
				}
			}
		}
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		case <-d.kick:
		case <-forceC:
			forceC = nil
		}
	}
}

// publishAd signs and publishes a new advertisement, and keeps it to answer
// directory requests.
func (d *Directory) publishAd(actors, groups []string, addrs []ma.Multiaddr, claims []GlobalClaim) error {
	ad := &Advertisement{
		Peer: []byte(d.h.ID()), Incarnation: d.cfg.Incarnation, Seq: d.seq.Add(1),
		Actors: actors, Groups: groups, Relay: d.cfg.Relay, Global: claims,
		TTLSeconds: uint32(d.cfg.TTL / time.Second),
	}
	for _, a := range addrs {
		ad.Addrs = append(ad.Addrs, a.String())
	}
	data, err := Sign(d.h, ad)
	if err != nil {
		return fmt.Errorf("discovery: signing advertisement: %w", err)
	}
	d.own.Store(&adEntry{ad: ad, raw: data})
	if d.narrow.Load() { // off the topic: the exchanges carry it (ads_scope.go)
		return nil
	}
	return d.topic.Publish(d.ctx, data)
}

// watchTopic asks for a republication when the topic gains its first peer.
func (d *Directory) watchTopic(events *pubsub.TopicEventHandler) {
	defer d.wg.Done()
	defer events.Cancel()
	n := 0
	for {
		ev, err := events.NextPeerEvent(d.ctx)
		if err != nil {
			return
		}
		switch ev.Type {
		case pubsub.PeerJoin:
			if n++; n == 1 {
				d.force.Store(true)
				d.Changed()
			}
		case pubsub.PeerLeave:
			n = max(0, n-1)
		}
	}
}

func capNames(names []string) []string {
	if len(names) > MaxAdNames {
		return names[:MaxAdNames]
	}
	return names
}

// Close stops advertising and answering, and waits for its goroutines and
// for the directory requests being answered (they are reset)
// (ctx is accepted for the library's uniform Close(ctx) error: every
// goroutine here ends at once when told to, so Close waits for them
// whatever ctx says, as Router.Close does after its drain.)
func (d *Directory) Close(context.Context) error {
	d.h.RemoveStreamHandler(SyncProtocol(d.cfg.Mesh))
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait() // collect cancels its subscription
	_ = d.topic.Close()
	_ = d.cfg.PubSub.UnregisterTopicValidator(AdsTopic(d.cfg.Mesh))
	return nil
}

// AdsTopic is the GossipSub topic of mesh's advertisements (which
// groups.TopicFilter admits).
func AdsTopic(mesh string) string { return "/troupe/" + mesh + "/ads" }
