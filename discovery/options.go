package discovery

import (
	"fmt"
	"log/slog"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Option configures StartAds, StartDHT and StartMDNS. Each uses the
// options that concern it (each option says which) and ignores the
// others.
type Option func(*config) error

// config is what the options set; zero fields take their defaults.
type config struct {
	mesh        string
	logger      *slog.Logger
	incarnation uint64
	ttl, tick   time.Duration
	relay       bool
	bootstrap   []libp2ppeer.AddrInfo
	findEvery   time.Duration
	client      bool
	departed    func(libp2ppeer.ID) bool
	wants       func() bool
	names       func() []string
	claims      ClaimSource
	lookupAbove int
	namesTick   time.Duration
	relays      func() bool // dht_relays.go
	large       func() bool // ads_scope.go
}

// apply applies opts over the defaults and checks the mesh name.
func apply(opts []Option) (config, error) {
	c := config{logger: slog.Default()}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c, CheckMesh(c.mesh)
}

// WithMesh names the mesh (see CheckMesh); required by all three.
func WithMesh(name string) Option { return func(c *config) error { c.mesh = name; return nil } }

// WithLogger sets the logger (default slog.Default()); all three.
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.logger = l; return nil } }

// WithIncarnation is the number put in every advertisement: a new value
// each time the peer starts (StartAds).
func WithIncarnation(n uint64) Option {
	return func(c *config) error { c.incarnation = n; return nil }
}

// WithAdTTL is how long others keep an advertisement (default 90 s); it
// is republished at a third of it (StartAds).
func WithAdTTL(d time.Duration) Option { return func(c *config) error { c.ttl = d; return nil } }

// WithAdTick is how often the source is polled for changes (default 2 s;
// Directory.Changed asks for a poll at once) (StartAds).
func WithAdTick(d time.Duration) Option { return func(c *config) error { c.tick = d; return nil } }

// WithRelayAd says in the advertisement that this peer serves as a
// circuit relay (Advertisement.Relay) (StartAds).
func WithRelayAd(on bool) Option { return func(c *config) error { c.relay = on; return nil } }

// WithBootstrap gives the DHT's static bootstrap peers; none are built in
// (StartDHT).
func WithBootstrap(peers ...libp2ppeer.AddrInfo) Option {
	return func(c *config) error { c.bootstrap = append(c.bootstrap, peers...); return nil }
}

// WithFindEvery is the longest wait between two rendezvous lookups; the
// first come sooner (default 1 minute) (StartDHT).
func WithFindEvery(d time.Duration) Option {
	return func(c *config) error { c.findEvery = d; return nil }
}

// WithDHTClient runs the DHT in client mode: it queries and advertises but
// serves no records to others (default: server mode) (StartDHT).
func WithDHTClient(on bool) Option { return func(c *config) error { c.client = on; return nil } }

// WithDeparture says whether a peer that disconnected left the mesh
// (default: always): when it reports false (a connection trimmed in a
// mesh larger than the connection budget, where most peers are not
// connected), the peer's advertisement stays until its TTL, and gossip
// keeps renewing it (StartAds).
func WithDeparture(left func(libp2ppeer.ID) bool) Option {
	return func(c *config) error { c.departed = left; return nil }
}

// WithWantsPeers says whether the node wants more peers (default:
// always): while it reports false (the node's dial budget is full), the
// DHT looks the rendezvous up no more, a lookup whose answer grows with
// the mesh (StartDHT).
func WithWantsPeers(wants func() bool) Option {
	return func(c *config) error { c.wants = wants; return nil }
}

// WithNames gives the DHT the names this peer hosts: above the lookup
// threshold (WithLookupAbove) it provides each under its NameKey.
func WithNames(names func() []string) Option {
	return func(c *config) error { c.names = names; return nil }
}

// WithLookupAbove sets the mesh size from which names are provided and
// looked up through the DHT (default DefaultLookupAbove, 32).
func WithLookupAbove(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("discovery: lookup threshold %d must be at least 1", n)
		}
		c.lookupAbove = n
		return nil
	}
}

// WithNamesTick sets how often the DHT looks at the names it provides
// (default 2 s).
func WithNamesTick(d time.Duration) Option {
	return func(c *config) error { c.namesTick = d; return nil }
}

// WithClaims gives StartAds the mesh-wide names this peer claims, to
// advertise with its actors (looked at every tick, as the actors are).
func WithClaims(claims ClaimSource) Option {
	return func(c *config) error { c.claims = claims; return nil }
}

// WithLargeMesh says whether the mesh is above the lookup threshold
// (default: never), asked every second: while it is, the directory
// leaves the advertisement topic and holds only the advertisements of
// the peers this one is connected to (StartAds). peer.Node passes its
// DHT's Large.
func WithLargeMesh(large func() bool) Option {
	return func(c *config) error { c.large = large; return nil }
}
