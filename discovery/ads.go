package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Limits on an advertisement; larger ones are rejected.
const (
	MaxAdBytes  = 64 << 10
	MaxAdNames  = 1000 // actor names, and group names
	MaxAdAddrs  = 32
	defaultTTL  = 90 * time.Second
	defaultTick = 10 * time.Second
)

// ErrBadAd reports an advertisement that is malformed, oversize, unsigned,
// or signed by another peer than the one it describes or came from.
var ErrBadAd = errors.New("discovery: bad advertisement")

// Advertisement is what a peer says it hosts (JXTA's peer advertisement):
// its public actors, its groups and its addresses. Field keys are stable.
type Advertisement struct {
	Peer        []byte   `cbor:"1,keyasint"` // peer ID bytes
	Incarnation uint64   `cbor:"2,keyasint"`
	Seq         uint64   `cbor:"3,keyasint"` // grows with each publication
	Actors      []string `cbor:"4,keyasint,omitempty"`
	Groups      []string `cbor:"5,keyasint,omitempty"`
	Addrs       []string `cbor:"6,keyasint,omitempty"`
	TTLSeconds  uint32   `cbor:"7,keyasint"`
}

// signedAd is the message on the wire: the advertisement's bytes and the
// peer key's signature over them.
type signedAd struct {
	Ad  []byte `cbor:"1,keyasint"`
	Sig []byte `cbor:"2,keyasint"`
}

var adDecMode = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:  4,
		MaxArrayElements: MaxAdNames,
		MaxMapPairs:      16,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return dm
}()

// Sign encodes ad and signs it with the host's private key.
func Sign(h host.Host, ad *Advertisement) ([]byte, error) {
	key := h.Peerstore().PrivKey(h.ID())
	if key == nil {
		return nil, errors.New("discovery: no private key for the host")
	}
	body, err := cbor.Marshal(ad)
	if err != nil {
		return nil, err
	}
	sig, err := key.Sign(body)
	if err != nil {
		return nil, err
	}
	return cbor.Marshal(signedAd{Ad: body, Sig: sig})
}

// Verify decodes a signed advertisement, checks its limits and that it is
// signed by the peer it describes, which must be from (the pubsub origin).
func Verify(data []byte, from libp2ppeer.ID) (*Advertisement, error) {
	if len(data) > MaxAdBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadAd, len(data))
	}
	var s signedAd
	if err := adDecMode.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadAd, err)
	}
	var ad Advertisement
	if err := adDecMode.Unmarshal(s.Ad, &ad); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadAd, err)
	}
	id, err := libp2ppeer.IDFromBytes(ad.Peer)
	if err != nil || id != from {
		return nil, fmt.Errorf("%w: describes %v, sent by %v", ErrBadAd, id, from)
	}
	pub, err := id.ExtractPublicKey()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadAd, err)
	}
	if ok, err := pub.Verify(s.Ad, s.Sig); err != nil || !ok {
		return nil, fmt.Errorf("%w: bad signature", ErrBadAd)
	}
	if len(ad.Actors) > MaxAdNames || len(ad.Groups) > MaxAdNames || len(ad.Addrs) > MaxAdAddrs {
		return nil, fmt.Errorf("%w: too many names", ErrBadAd)
	}
	return &ad, nil
}

// AdSource says what this peer hosts now.
type AdSource func() (actors, groups []string)

// AdsConfig configures StartAds.
type AdsConfig struct {
	Mesh        string
	PubSub      *pubsub.PubSub
	Incarnation uint64
	Source      AdSource
	TTL         time.Duration // default 90 s; republished at a third of it
	Tick        time.Duration // how often changes are looked for (default 10 s)
	Logger      *slog.Logger
}

type adEntry struct {
	ad      *Advertisement
	expires time.Time
}

// Directory advertises this peer on the mesh's advertisement topic and
// keeps the advertisements of the others until they expire or their peer
// disconnects. Its methods are safe for concurrent use.
type Directory struct {
	cfg   AdsConfig
	h     host.Host
	topic *pubsub.Topic
	sub   *pubsub.Subscription

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	mu    sync.Mutex // guards peers
	peers map[libp2ppeer.ID]adEntry

	seq      atomic.Uint64
	rejected atomic.Uint64
}

// StartAds starts advertising and collecting advertisements.
func StartAds(h host.Host, cfg AdsConfig) (*Directory, error) {
	if err := CheckMesh(cfg.Mesh); err != nil {
		return nil, err
	}
	if cfg.PubSub == nil || cfg.Source == nil {
		return nil, errors.New("discovery: advertisements need a pubsub and a source")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = defaultTTL
	}
	if cfg.Tick <= 0 {
		cfg.Tick = defaultTick
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Directory{cfg: cfg, h: h, peers: make(map[libp2ppeer.ID]adEntry), kick: make(chan struct{}, 1)}
	name := "/troupe/" + cfg.Mesh + "/ads"
	err := cfg.PubSub.RegisterTopicValidator(name, func(_ context.Context, _ libp2ppeer.ID, m *pubsub.Message) pubsub.ValidationResult {
		origin, err := libp2ppeer.IDFromBytes(m.From)
		if err != nil {
			d.rejected.Add(1)
			return pubsub.ValidationReject
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
	if d.topic, err = cfg.PubSub.Join(name); err == nil {
		d.sub, err = d.topic.Subscribe()
	}
	if err != nil {
		_ = cfg.PubSub.UnregisterTopicValidator(name)
		return nil, fmt.Errorf("discovery: advertisements: %w", err)
	}
	events, err := h.EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
	if err != nil {
		d.sub.Cancel()
		return nil, err
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(3)
	go d.advertise()
	go d.collect()
	go d.expire(events)
	return d, nil
}

// Changed asks for a new advertisement soon (the actors or groups changed).
func (d *Directory) Changed() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *Directory) advertise() {
	defer d.wg.Done()
	tick := time.NewTicker(d.cfg.Tick)
	defer tick.Stop()
	var last []byte
	var lastAt time.Time
	for {
		actors, groups := d.cfg.Source()
		ad := Advertisement{
			Peer: []byte(d.h.ID()), Incarnation: d.cfg.Incarnation,
			Actors: capNames(actors), Groups: capNames(groups),
			TTLSeconds: uint32(d.cfg.TTL / time.Second),
		}
		for i, a := range d.h.Addrs() {
			if i == MaxAdAddrs {
				break
			}
			ad.Addrs = append(ad.Addrs, a.String())
		}
		content, _ := cbor.Marshal(ad) // without Seq: what changed?
		if !bytes.Equal(content, last) || time.Since(lastAt) >= d.cfg.TTL/3 {
			ad.Seq = d.seq.Add(1)
			if data, err := Sign(d.h, &ad); err != nil {
				d.cfg.Logger.Warn("discovery: cannot sign advertisement", "err", err)
			} else if err := d.topic.Publish(d.ctx, data); err == nil {
				last, lastAt = content, time.Now()
			}
		}
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		case <-d.kick:
		}
	}
}

func capNames(names []string) []string {
	if len(names) > MaxAdNames {
		return names[:MaxAdNames]
	}
	return names
}

func (d *Directory) collect() {
	defer d.wg.Done()
	for {
		m, err := d.sub.Next(d.ctx)
		if err != nil {
			return
		}
		ad, ok := m.ValidatorData.(*Advertisement)
		if !ok {
			continue
		}
		id, _ := libp2ppeer.IDFromBytes(ad.Peer)
		if id == d.h.ID() {
			continue
		}
		d.mu.Lock()
		if old, ok := d.peers[id]; !ok || old.ad.Incarnation != ad.Incarnation || old.ad.Seq < ad.Seq {
			d.peers[id] = adEntry{ad: ad, expires: time.Now().Add(time.Duration(ad.TTLSeconds) * time.Second)}
		}
		d.mu.Unlock()
	}
}

// expire drops advertisements whose TTL lapsed or whose peer disconnected.
func (d *Directory) expire(events event.Subscription) {
	defer d.wg.Done()
	defer events.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case ev, ok := <-events.Out():
			if !ok {
				return
			}
			if e := ev.(event.EvtPeerConnectednessChanged); e.Connectedness == network.NotConnected {
				d.mu.Lock()
				delete(d.peers, e.Peer)
				d.mu.Unlock()
			}
		case now := <-tick.C:
			d.mu.Lock()
			for id, e := range d.peers {
				if now.After(e.expires) {
					delete(d.peers, id)
				}
			}
			d.mu.Unlock()
		}
	}
}

// Peers returns the live advertisements of the other peers, by peer ID.
func (d *Directory) Peers() []*Advertisement {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*Advertisement, 0, len(d.peers))
	for _, e := range d.peers {
		out = append(out, e.ad)
	}
	slices.SortFunc(out, func(a, b *Advertisement) int { return bytes.Compare(a.Peer, b.Peer) })
	return out
}

// Lookup returns the peers advertising an actor called name.
func (d *Directory) Lookup(name string) []libp2ppeer.ID {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []libp2ppeer.ID
	for id, e := range d.peers {
		if slices.Contains(e.ad.Actors, name) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Rejected returns how many advertisements were rejected.
func (d *Directory) Rejected() uint64 { return d.rejected.Load() }

// Close stops advertising and waits for its goroutines.
func (d *Directory) Close() {
	d.cancel()
	d.sub.Cancel()
	d.wg.Wait()
	_ = d.topic.Close()
	_ = d.cfg.PubSub.UnregisterTopicValidator("/troupe/" + d.cfg.Mesh + "/ads")
}
