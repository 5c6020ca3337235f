package peer

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/discovery"
)

// Option configures a Node.
type Option func(*config) error

type config struct {
	prom       prometheus.Registerer // nil: no metrics registered
	key        crypto.PrivKey
	keyFile    string
	listen     []string
	psk        pnet.PSK
	allow      []libp2ppeer.ID
	natPortMap bool
	relay      bool
	// relayService, relays: see relay.go. hostOpts are libp2p options
	// tests add (a reachability forced, say).
	relayService bool
	relays       []libp2ppeer.AddrInfo
	findRelays   bool // see relayfind.go
	hostOpts     []libp2p.Option
	logger       *slog.Logger
	actorOpts    []actor.Option
	registry     *codec.Registry
	maxFrame     int
	linkQueue    int
	peerBudget   int64
	spawnPolicy  SpawnPolicy
	spawnQuota   int
	spawnTotal   int    // live actors all other peers may have spawned
	spawnNames   string // the prefix of names a remote spawn may ask for
	mesh         string
	mdns         bool
	dht          bool
	dhtClient    bool
	groups       bool
	adTick       time.Duration
	findEvery    time.Duration
	lookupAbove  int // names by DHT lookup from this mesh size (0: discovery's default)
	adTTL        time.Duration
	bootstrap    []libp2ppeer.AddrInfo
	limits       Limits
	conns        Connections // defaults applied in validate
	dedupeConns  bool        // the guard closes duplicate connections (dedupe.go; tests only)
	listenSet    bool        // listen came from WithListenAddrs

	liveness    time.Duration // probe.go; DefaultLiveness unless livenessSet
	livenessSet bool

	relayMembers  []libp2ppeer.ID     // relaymembers.go
	strangerLimit *relayv2.RelayLimit // nil: libp2p's default
	natService    bool                // relay.go
}

// DefaultListenAddrs returns the addresses a node listens on unless
// WithListenAddrs says otherwise: TCP and QUIC on every IPv4 and IPv6
// interface, on ephemeral ports.
func DefaultListenAddrs() []string {
	return []string{"/ip4/0.0.0.0/tcp/0", "/ip4/0.0.0.0/udp/0/quic-v1", "/ip6/::/tcp/0", "/ip6/::/udp/0/quic-v1"}
}

func defaultConfig() config {
	return config{
		listen:    DefaultListenAddrs(),
		logger:    slog.Default(),
		maxFrame:  codec.DefaultMaxFrame,
		linkQueue: 64 << 10,
		mesh:      "default",

		spawnQuota: DefaultRemoteSpawnQuota,
		spawnTotal: DefaultRemoteSpawnTotal,
		spawnNames: DefaultRemoteSpawnNames,
	}
}

// ErrInvalidOption reports an option of New with a value it cannot use;
// New's error wraps it, with the reason.
var ErrInvalidOption = errors.New("peer: invalid option")

// invalid returns an error wrapping ErrInvalidOption.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}

func (c *config) validate() error {
	c.conns = c.conns.withDefaults()
	if !c.livenessSet {
		c.liveness = DefaultLiveness
	}
	switch {
	case len(c.listen) == 0:
		return invalid("no listen addresses")
	case c.psk != nil && len(c.psk) != 32:
		return invalid("private network key must be 32 bytes, got %d", len(c.psk))
	case c.maxFrame < 1024 || c.maxFrame > codec.MaxFrameLimit:
		return invalid("max frame %d: must be from 1 KiB to %d (1 GiB)", c.maxFrame, codec.MaxFrameLimit)
	case c.linkQueue < 1:
		return invalid("link queue %d must be positive", c.linkQueue)
	case c.peerBudget < 0:
		return invalid("peer budget %d must not be negative", c.peerBudget)
	case c.logger == nil:
		return invalid("logger must not be nil")
	case c.findRelays && !c.groups:
		return invalid("relay discovery needs advertisements: WithGroups(true)")
	case c.key != nil && c.keyFile != "":
		return invalid("give an identity key or a key file, not both")
	case c.psk != nil && !slices.ContainsFunc(c.listen, func(a string) bool { return !isQUIC(a) }):
		return invalid("a private network (PSK) runs on TCP only, and every listen address is QUIC")
	case c.allow != nil && len(c.allow) == 0:
		return invalid("an empty allowlist: it would admit no peer at all, or (as no allowlist) every peer")
	}
	return nil
}

// WithIdentity sets the node's private key (default: a fresh Ed25519 key
// per start, so a fresh peer ID).
func WithIdentity(k crypto.PrivKey) Option {
	return func(c *config) error {
		if k == nil {
			return invalid("a nil identity key")
		}
		c.key = k
		return nil
	}
}

// WithKeyFile loads the identity from path, creating an Ed25519 key there
// (mode 0600) when the file does not exist (see LoadOrCreateKey: a file
// others may read is refused).
func WithKeyFile(path string) Option {
	return func(c *config) error {
		if path == "" {
			return invalid("an empty key file path")
		}
		c.keyFile = path
		return nil
	}
}

// WithListenAddrs sets the multiaddrs to listen on (default
// DefaultListenAddrs). Tests use /ip4/127.0.0.1/tcp/0.
func WithListenAddrs(addrs ...string) Option {
	return func(c *config) error { c.listen, c.listenSet = slices.Clone(addrs), true; return nil }
}

// WithPrivateNetwork sets a 32-byte pre-shared key: only peers with the same
// key can connect. It rules out QUIC (TCP only): QUIC listen addresses
// are left out (with a warning when WithListenAddrs gave them), and a node
// left with none is an error.
// A key of any other length, nil or empty included (a key file that failed
// to load), is an error, never a node without a private network.
func WithPrivateNetwork(psk []byte) Option {
	return func(c *config) error {
		if len(psk) != 32 {
			return invalid("private network key must be 32 bytes, got %d", len(psk))
		}
		c.psk = pnet.PSK(slices.Clone(psk))
		return nil
	}
}

// WithAllowlist admits only the given peers: connections to or from any
// other peer are refused after the security handshake.
func WithAllowlist(ids ...libp2ppeer.ID) Option {
	return func(c *config) error {
		c.allow = append(c.allow, ids...)
		if c.allow == nil { // no ID: refused by validate, not taken as no allowlist
			c.allow = []libp2ppeer.ID{}
		}
		return nil
	}
}

// WithNATPortMap turns UPnP/NAT-PMP port mapping on (default off).
func WithNATPortMap(on bool) Option { return func(c *config) error { c.natPortMap = on; return nil } }

// WithRelay lets the node dial through circuit relays, and be dialed
// through them (default off; WithRelays and WithRelayService turn it on).
func WithRelay(on bool) Option { return func(c *config) error { c.relay = on; return nil } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.logger = l; return nil } }

// WithActorOptions passes options to the node's actor system (its peer ID
// and Remote are set by the node).
func WithActorOptions(opts ...actor.Option) Option {
	return func(c *config) error { c.actorOpts = append(c.actorOpts, opts...); return nil }
}

// WithRegistry sets the message type registry (default: a fresh one with
// the built-in types). Register application types before creating the node.
func WithRegistry(r *codec.Registry) Option {
	return func(c *config) error { c.registry = r; return nil }
}

// WithMaxFrame sets the largest frame a node sends or accepts (default 4 MiB).
// Larger messages are refused at the sender (ErrTooLarge). Peers may set
// different maximums: a user message over the receiver's maximum is
// refused there by itself, and an Ask whose request or reply it was fails
// with routing.ErrTooLarge. (A control message, such as the arguments of
// a remote spawn, travels in one frame: over both 64 KiB and the
// receiver's maximum, it resets the control stream.)
func WithMaxFrame(n int) Option { return func(c *config) error { c.maxFrame = n; return nil } }

// WithMesh names the mesh the node belongs to (default "default"): mDNS,
// the DHT rendezvous, groups and advertisements only see peers of the same
// mesh. A name is 1–32 characters of a-z, 0-9 and '-' (discovery.CheckMesh).
func WithMesh(name string) Option {
	return func(c *config) error {
		if err := discovery.CheckMesh(name); err != nil {
			return err
		}
		c.mesh = name
		return nil
	}
}

// WithMDNS turns on announcing the node on the LAN by multicast DNS and
// connecting to the peers of the same mesh it finds (default off). It needs
// a multicast interface and a non-loopback listen address; without an
// interface it logs a warning and starts once one comes up. It restarts
// when the interfaces or the node's addresses change.
func WithMDNS(on bool) Option { return func(c *config) error { c.mdns = on; return nil } }

// WithDHT joins Troupe's Kademlia DHT (server mode, protocol prefix
// /troupe) through the given bootstrap peers and connects to the peers of
// the mesh found at the rendezvous "/troupe/<mesh>" (default off). No public
// bootstrap peers are built in: give at least one peer of the mesh, or none
// on the first peer, which others then use as their bootstrap peer.
func WithDHT(bootstrap ...libp2ppeer.AddrInfo) Option {
	return func(c *config) error {
		c.dht, c.bootstrap = true, append(c.bootstrap, bootstrap...)
		return nil
	}
}

// WithDHTClient runs the DHT (WithDHT) in client mode: the node queries
// and advertises through the DHT but serves no records (default: server
// mode, which suits peers that others can reach).
func WithDHTClient(on bool) Option { return func(c *config) error { c.dhtClient = on; return nil } }

// WithAdvertisements sets how often the node looks for changes in what it
// hosts to advertise them (default 2 s; a poll is cheap, and public actors
// spawned or stopped and groups joined or left are advertised at once, so
// the poll catches what has no event, such as new addresses) and how long
// its advertisements live (default 90 s). Advertisements run with
// WithGroups.
func WithAdvertisements(every, ttl time.Duration) Option {
	return func(c *config) error {
		if every <= 0 || ttl < time.Second {
			return invalid("advertisements every %v with TTL %v: both must be positive, the TTL at least 1 s", every, ttl)
		}
		c.adTick, c.adTTL = every, ttl
		return nil
	}
}

// WithGroups turns on actor groups across the peers of the mesh: each
// group is a GossipSub topic (default off: groups are local to the node).
// It also turns on signed advertisements of the node's public actors and
// groups on the mesh, which Node.Directory collects.
func WithGroups(on bool) Option { return func(c *config) error { c.groups = on; return nil } }

// WithDHTFindEvery caps the wait between two DHT rendezvous lookups
// (default 1 minute; the first lookups come sooner).
func WithDHTFindEvery(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("DHT lookup interval %v must be positive", d)
		}
		c.findEvery = d
		return nil
	}
}

// WithLookupAbove sets the mesh size from which the node provides its
// public names in the DHT and Whereis looks names up there (default
// discovery.DefaultLookupAbove, 32; with WithDHT). The node judges the
// size from its DHT routing table: see docs/scale.md.
func WithLookupAbove(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("lookup threshold %d must be at least 1", n)
		}
		c.lookupAbove = n
		return nil
	}
}

// WithLinkQueue sets how many messages may wait for one remote peer before
// further ones become dead letters with routing.ErrLinkFull (default 65536):
// replies up to that bound, Ask requests up to seven eighths of it, other
// sends up to three quarters (routing.WithLinkQueue).
func WithLinkQueue(n int) Option { return func(c *config) error { c.linkQueue = n; return nil } }

// WithPeerBudget sets the bytes of messages one peer may have delivered to
// this node's actors that they did not handle yet (0: the default,
// routing.DefaultPeerBudget, 64 MiB): at it, the peer's streams pause
// until the actors handled half. How much of one peer's messages one actor
// may hold is transport.WithRemoteBacklog (through WithActorOptions; 16 MiB by
// default): keep the budget several times that, or one slow actor pauses
// its peer.
func WithPeerBudget(bytes int64) Option {
	return func(c *config) error { c.peerBudget = bytes; return nil }
}

// isQUIC reports whether the listen address addr is a QUIC one.
func isQUIC(addr string) bool { return strings.Contains(addr, "/quic") }
