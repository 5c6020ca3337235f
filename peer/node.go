package peer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/peer/internal/global"
	"github.com/troupe-mesh/troupe/peer/internal/latency"
	"github.com/troupe-mesh/troupe/peer/internal/lookup"
	"github.com/troupe-mesh/troupe/peer/internal/metrics"
	"github.com/troupe-mesh/troupe/peer/internal/nodesvc"
	"github.com/troupe-mesh/troupe/peer/internal/redial"
	"github.com/troupe-mesh/troupe/peer/internal/relay"
	"github.com/troupe-mesh/troupe/routing"
	"github.com/troupe-mesh/troupe/routing/groups"
)

// Node is a Troupe peer. Its methods are safe for concurrent use.
type Node struct {
	cfg    config
	host   host.Host
	sys    *actor.System
	port   *transport.Port // sys's transport side, as the router and groups got it
	router *routing.Router
	reg    *codec.Registry
	mdns   *discovery.MDNS
	dht    *discovery.DHT
	// size holds dht for what its own goroutines call back (the dial
	// budget, departures, the directory's scope), which may run before
	// StartDHT returned and dht is set.
	size   *meshSize
	groups *groups.Groups
	dir    *discovery.Directory
	names  *lookup.Finder // Whereis's DHT lookups and their cache (names.go)
	global *global.Names  // mesh-wide names (globalnames.go)

	dialFails   dialFailures   // discovered peers that could not be dialed
	holePunches *holePunches   // counted by libp2p's hole punching (relay.go)
	relaySvc    *relay.Service // nil without WithRelayService (relaymembers.go)
	relays      *relaySource   // AutoRelay's candidates (relayfind.go)

	// latency keeps peers' round trips known, and their liveness (probe.go).
	latency *latency.Prober
	// redial redials the peers that must come back (probe.go).
	redial *redial.Redialer
	// svc is the node actor's service: remote spawn and lookups (nodeactor.go).
	svc *nodesvc.Service
	// metrics is registered with cfg.prom; nil without WithPrometheus (prometheus.go).
	metrics *metrics.Collector

	cm    *connmgr.BasicConnMgr // the host's connection manager (connmgr.go)
	guard *guard                // protects the busy peers' connections (protect.go)
	punch *puncher              // hole punching with retries, or nil (holepunch.go)

	closing  atomic.Bool   // Close began
	closed   chan struct{} // closed when Close ended; closeErr is set then
	closeErr error
}

// New starts a node: a libp2p host (TCP and QUIC on all interfaces with
// ephemeral ports unless WithListenAddrs says otherwise; it dials a peer's
// TCP addresses first and its QUIC ones only if no TCP connection came up
// within 250 ms, since a crashed peer's kernel resets TCP connections at
// once while a QUIC one lingers for 30 s; a fresh identity
// unless WithIdentity or WithKeyFile gives one), its router and its actor
// system with the node actor. Discovery and groups run only when their
// options turn them on. An option New cannot use is an error wrapping
// ErrInvalidOption; ctx bounds only the start. The caller must Close the
// node.
func New(ctx context.Context, opts ...Option) (*Node, error) {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return nil, invalid("option %d is nil", i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := cfg.key
	if cfg.keyFile != "" {
		k, err := LoadOrCreateKey(cfg.keyFile)
		if err != nil {
			return nil, err
		}
		key = k
	}
	inc, err := routing.NewIncarnation()
	if err != nil {
		return nil, err
	}
	listen := cfg.listen
	if cfg.psk != nil { // no QUIC with a PSK
		listen = slices.DeleteFunc(slices.Clone(listen), isQUIC)
		if cfg.listenSet && len(listen) < len(cfg.listen) {
			cfg.logger.Warn("peer: a private network runs on TCP only: not listening on the QUIC addresses", "listen", cfg.listen)
		}
	}
	hopts := []libp2p.Option{
		libp2p.UserAgent(routing.AgentVersion(inc)),
		libp2p.SwarmOpts(swarm.WithDialRanker(tcpFirst)),
		libp2p.ListenAddrStrings(listen...),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, muxer(cfg.limits)),
		libp2p.Transport(tcp.NewTCPTransport),
	}
	cm, err := newConnManager(cfg.conns)
	if err != nil {
		return nil, err
	}
	hopts = append(hopts, libp2p.ConnectionManager(budgetConnMgr{cm}))
	if cfg.prom != nil {
		hopts = append(hopts, libp2p.PrometheusRegisterer(cfg.prom))
	} else {
		hopts = append(hopts, libp2p.DisableMetrics())
	}
	if key != nil {
		hopts = append(hopts, libp2p.Identity(key))
	}
	rm, err := resourceManager(cfg.limits, cfg.maxFrame)
	if err != nil {
		return nil, err
	}
	hopts = append(hopts, libp2p.ResourceManager(rm))
	if cfg.psk != nil {
		hopts = append(hopts, libp2p.PrivateNetwork(cfg.psk))
	} else {
		hopts = append(hopts, libp2p.Transport(libp2pquic.NewTransport))
	}
	if len(cfg.allow) > 0 {
		a := make(allowlist, len(cfg.allow))
		for _, id := range cfg.allow {
			a[id] = struct{}{}
		}
		hopts = append(hopts, libp2p.ConnectionGater(a))
	}
	if cfg.natPortMap {
		hopts = append(hopts, libp2p.NATPortMap())
	}
	hp, relays := new(holePunches), new(relaySource)
	hopts = append(hopts, relayOptions(cfg, relays)...)
	h, err := libp2p.New(hopts...)
	if err == nil {
		relays.h.Store(&h)
	}
	if err != nil {
		_ = rm.Close() // libp2p closes them only once a host exists
		_ = cm.Close()
		return nil, fmt.Errorf("peer: starting libp2p host: %w", err)
	}
	reg := cfg.registry
	if reg == nil {
		if reg, err = codec.NewRegistry(); err != nil {
			_ = h.Close()
			return nil, err
		}
	}
	if err := nodesvc.RegisterTypes(reg); err != nil {
		_ = h.Close()
		return nil, err
	}
	aopts := append([]actor.Option{actor.WithLogger(cfg.logger)}, cfg.actorOpts...)
	var dir atomic.Pointer[discovery.Directory] // set once advertising starts
	size := new(meshSize)                       // its DHT set once the DHT starts
	// A public actor spawned or stopped changes the advertisement at once.
	aopts = append(aopts, actor.WithPeer(h.ID().String()), transport.WithNamesChanged(func() {
		if d := dir.Load(); d != nil {
			d.Changed()
		}
	}))
	// The system and its transport are made together: the router and the
	// groups get the system's Port as they are built, inside its factory.
	var (
		r    *routing.Router
		gt   *groups.Groups
		port *transport.Port
	)
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		port = p
		var err error
		r, err = routing.New(h, reg, p, routing.WithLogger(cfg.logger), routing.WithMaxFrame(cfg.maxFrame), routing.WithLinkQueue(cfg.linkQueue),
			routing.WithIncarnation(inc), routing.WithPeerBudget(cfg.peerBudget), routing.WithProtected(NodeActor))
		if err != nil {
			return nil, nil, err
		}
		if !cfg.groups {
			return r, nil, nil
		}
		gt, err = groups.New(h, reg, cfg.mesh, p, groups.WithLogger(cfg.logger),
			groups.WithDeparture(departure(h, &dir, cfg.conns.High, size)),
			// A group joined or left changes the advertisement at once.
			groups.WithOnChange(func() {
				if d := dir.Load(); d != nil {
					d.Changed()
				}
			}))
		if err != nil {
			// r is closed below, once NewSystem returned: its stream
			// handlers may be waiting for that (transport.Factory).
			gt = nil
			return nil, nil, err
		}
		return r, gt, nil
	}, aopts...)
	if err != nil {
		if gt != nil {
			_ = gt.Close(ctx)
		}
		if r != nil {
			_ = r.Close(ctx)
		}
		_ = h.Close()
		return nil, err
	}
	// undo stops what New started so far, for a failure after this.
	undo := func(err error) (*Node, error) {
		_ = sys.Shutdown(ctx)
		if gt != nil {
			_ = gt.Close(ctx)
		}
		_ = r.Close(ctx)
		_ = h.Close()
		return nil, err
	}
	n := &Node{cfg: cfg, host: h, sys: sys, port: port, router: r, reg: reg, groups: gt, holePunches: hp, size: size,
		cm: cm, closed: make(chan struct{}), relaySvc: startRelayService(h, cfg), relays: relays}
	n.names = lookup.New(lookup.Config{DHT: n.nameDHT, Connect: h.Connect, Ask: n.Lookup})
	if n.redial, err = startRedialer(n); err != nil {
		n.relaySvc.Close()
		return undo(err)
	}
	n.guard = startGuard(n)
	n.latency = latency.Start(h, cfg.liveness, n.life, n.silent)
	n.global = global.New(global.Config{Sys: sys, Self: h.ID(), Lost: globalLost})
	if punches(cfg) {
		if n.punch, err = startPuncher(h, hp); err != nil {
			_ = n.Close(ctx)
			return nil, err
		}
	}
	if err := n.registerMetrics(); err != nil {
		_ = n.Close(ctx)
		return nil, err
	}
	n.svc = nodesvc.New(nodesvc.Config{Sys: sys, Reg: reg, Policy: cfg.spawnPolicy, Quota: cfg.spawnQuota, Total: cfg.spawnTotal, Names: cfg.spawnNames})
	if _, err := sys.Spawn(NodeActor, n.svc.Actor, transport.SystemName()); err != nil {
		_ = n.Close(ctx)
		return nil, err
	}
	if gt != nil {
		n.dir, err = discovery.StartAds(h, gt.PubSub(), func() ([]string, []string) { return sys.Names(), group.Names(sys) },
			discovery.WithMesh(cfg.mesh), discovery.WithIncarnation(r.Incarnation()), discovery.WithAdTick(cfg.adTick),
			discovery.WithAdTTL(cfg.adTTL), discovery.WithLogger(cfg.logger), discovery.WithRelayAd(cfg.relayService),
			discovery.WithDeparture(departure(h, &dir, cfg.conns.High, size)), discovery.WithClaims(n.global.Source),
			discovery.WithLargeMesh(size.Large))
		if err != nil {
			_ = n.Close(ctx)
			return nil, err
		}
		dir.Store(n.dir)
		n.global.Start(n.dir)
		relays.dir.Store(n.dir)
	}
	if cfg.dht {
		n.dht, err = discovery.StartDHT(h, n.connectFound, discovery.WithMesh(cfg.mesh), discovery.WithBootstrap(cfg.bootstrap...),
			discovery.WithLogger(cfg.logger), discovery.WithFindEvery(cfg.findEvery), discovery.WithDHTClient(cfg.dhtClient),
			discovery.WithWantsPeers(func() bool { return !n.dialBudgetFull() }),
			discovery.WithNames(sys.Names), lookupAboveOption(cfg.lookupAbove), discovery.WithRelayProvider(n.relaying))
		if err != nil {
			_ = n.Close(ctx)
			return nil, err
		}
		relays.dht.Store(n.dht)
		size.dht.Store(n.dht)
	}
	if cfg.mdns {
		// StartMDNS waits for a multicast interface when there is none yet;
		// any other failure is a reason to run without LAN discovery, not
		// to fail.
		if n.mdns, err = discovery.StartMDNS(h, n.connectFound, discovery.WithMesh(cfg.mesh), discovery.WithLogger(cfg.logger)); err != nil {
			cfg.logger.Warn("peer: mDNS is off", "err", err)
			n.mdns = nil
		}
	}
	return n, nil
}

// Close stops the actors, drains the outbound links until each peer has
// read what was queued for it (or until ctx ends) and closes the host. It
// is idempotent and waits for every goroutine the node
// started; a call while another closes the node waits for it, or for its
// own ctx. On an event loop it returns actor.ErrBlockingCall and closes
// nothing.
func (n *Node) Close(ctx context.Context) error {
	if n == nil { // a New that failed: defer n.Close(ctx) is safe
		return nil
	}
	if n.sys.InEventLoop() {
		return actor.ErrBlockingCall
	}
	if n.closing.Swap(true) { // another call closes, or closed, the node
		select {
		case <-n.closed: // first: a node closed answers at once, whatever ctx
			return n.closeErr
		default:
		}
		select {
		case <-n.closed:
			return n.closeErr
		case <-ctx.Done():
			return fmt.Errorf("peer: waiting for another Close: %w", ctx.Err())
		}
	}
	defer close(n.closed)
	if n.metrics != nil {
		n.cfg.prom.Unregister(n.metrics)
	}
	func() {
		var discErr error // discovery stops before the host
		if n.mdns != nil {
			discErr = n.mdns.Close(ctx)
		}
		if n.dht != nil {
			discErr = errors.Join(discErr, n.dht.Close(ctx))
		}
		n.global.Close()
		if n.dir != nil {
			discErr = errors.Join(discErr, n.dir.Close(ctx))
		}
		n.latency.Close()
		n.redial.Close()
		n.guard.close()
		n.punch.close()
		shutErr := n.sys.Shutdown(ctx)
		var groupsErr error
		if n.groups != nil {
			groupsErr = n.groups.Close(ctx)
		}
		routerErr := n.router.Close(ctx)
		n.relaySvc.Close()
		n.closeErr = errors.Join(
			discErr,
			shutErr,
			groupsErr,
			routerErr,
			n.host.Close(),
		)
	}()
	return n.closeErr
}
