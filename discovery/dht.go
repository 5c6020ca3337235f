package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
)

// DHTProtocolPrefix keeps Troupe's Kademlia DHT apart from the public IPFS
// DHT: its protocol is /troupe/kad/1.0.0.
const DHTProtocolPrefix = "/troupe"

// DHTConfig configures StartDHT.
type DHTConfig struct {
	Mesh      string                // mesh name (see CheckMesh); peers meet at /troupe/<mesh>
	Bootstrap []libp2ppeer.AddrInfo // static bootstrap peers; none are built in
	// Connect connects to a found peer (a node's Connect).
	Connect func(context.Context, libp2ppeer.AddrInfo) error
	// FindEvery is the longest wait between two rendezvous lookups; the
	// first lookups come sooner (default 1 minute).
	FindEvery time.Duration
	Logger    *slog.Logger // default slog.Default()
	// Client runs the DHT in client mode: it queries and advertises but
	// serves no records to others (default: server mode).
	Client bool
}

// DHT finds peers beyond the LAN: a Kademlia DHT in server mode under
// Troupe's own protocol prefix, with a rendezvous on "/troupe/<mesh>" where
// every peer advertises itself and looks the others up.
type DHT struct {
	cfg DHTConfig
	h   host.Host
	kad *dht.IpfsDHT
	rd  *drouting.RoutingDiscovery

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartDHT joins the DHT through the bootstrap peers and starts the
// rendezvous. Close stops it (before the host is closed).
func StartDHT(h host.Host, cfg DHTConfig) (*DHT, error) {
	if err := CheckMesh(cfg.Mesh); err != nil {
		return nil, err
	}
	if cfg.Connect == nil {
		return nil, fmt.Errorf("discovery: DHT needs a Connect function")
	}
	if cfg.FindEvery <= 0 {
		cfg.FindEvery = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mode := dht.ModeServer
	if cfg.Client {
		mode = dht.ModeClient
	}
	opts := []dht.Option{dht.Mode(mode), dht.ProtocolPrefix(DHTProtocolPrefix)}
	if len(cfg.Bootstrap) > 0 {
		opts = append(opts, dht.BootstrapPeers(cfg.Bootstrap...))
	}
	kad, err := dht.New(h, opts...)
	if err != nil {
		return nil, fmt.Errorf("discovery: DHT: %w", err)
	}
	d := &DHT{cfg: cfg, h: h, kad: kad, rd: drouting.NewRoutingDiscovery(kad)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(2)
	go d.advertise()
	go d.find()
	return d, nil
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

// advertise joins through the bootstrap peers, then keeps this peer's
// provider record under the rendezvous fresh. Advertising fails until the
// routing table has a peer; it is retried with backoff.
func (d *DHT) advertise() {
	defer d.wg.Done()
	for _, b := range d.cfg.Bootstrap {
		if b.ID == d.h.ID() {
			continue
		}
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		if err := d.cfg.Connect(ctx, b); err != nil {
			d.cfg.Logger.Warn("discovery: bootstrap peer unreachable", "peer", b.ID, "err", err)
		}
		cancel()
	}
	_ = d.kad.Bootstrap(d.ctx)
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
		if !d.sleep(wait) {
			return
		}
	}
}

// find looks the rendezvous up, sooner at first, and connects to the peers
// found.
func (d *DHT) find() {
	defer d.wg.Done()
	wait := min(500*time.Millisecond, d.cfg.FindEvery)
	for d.sleep(wait) {
		wait = min(2*wait, d.cfg.FindEvery)
		ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
		peers, err := d.rd.FindPeers(ctx, d.Rendezvous())
		if err != nil {
			cancel()
			d.cfg.Logger.Debug("discovery: find peers", "err", err)
			continue
		}
		for ai := range peers {
			if ai.ID == d.h.ID() || len(ai.Addrs) == 0 || d.h.Network().Connectedness(ai.ID) == network.Connected {
				continue
			}
			if err := d.cfg.Connect(ctx, ai); err != nil {
				d.cfg.Logger.Debug("discovery: DHT peer unreachable", "peer", ai.ID, "err", err)
			}
		}
		cancel()
	}
}

// Close stops the rendezvous and the DHT and waits for their goroutines.
func (d *DHT) Close() error {
	d.cancel()
	d.wg.Wait()
	return d.kad.Close()
}
