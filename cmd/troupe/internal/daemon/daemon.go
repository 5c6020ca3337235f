package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/meshview"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// Daemon is a started daemon: the node, its built-in actors, the
// control socket and the metrics server.
type Daemon struct {
	home       cli.Home
	cfg        config.Config
	node       *peer.Node
	reg        *codec.Registry
	log        *slog.Logger
	level      *slog.LevelVar // the log's, changed by 'troupe log level'
	started    time.Time
	out        io.Writer
	ctl        *control.Server
	metrics    *control.HTTPServer
	ui         *control.HTTPServer
	view       *meshview.Hub
	stopView   func()
	stopEvents func()
	stopMemory func() // memrelease's sampler
	// memoryRelease is memrelease's state for 'troupe id --json'.
	memoryRelease string
	// embeddedChat: this is a chat's own peer, which refuses chat requests.
	embeddedChat bool
	version      string        // the binary's, for info and 'troupe id'
	stopped      chan struct{} // closed by 'troupe stop'
	stopOnce     sync.Once
	unlock       func() // the home's lock, when Open took it
	closeOnce    sync.Once
	closeErr     error
}

// Options are what Start needs besides the home and its configuration.
type Options struct {
	// Logs is where the daemon's log goes; Out takes its event lines
	// (joined, left, down ...).
	Logs, Out io.Writer
	// EmbeddedChat: this is a chat's own peer, which serves every request
	// but chat (the chats of other terminals would end with it) and
	// refuses to stop but by the chat's /quit.
	EmbeddedChat bool
	// Version is the binary's version, which info and 'troupe id' say.
	Version string
}

// Start starts the node described by cfg with its built-in actors, its
// control socket on h and the HTTP servers cfg asks for. Close stops
// them all.
func Start(ctx context.Context, h cli.Home, cfg config.Config, o Options) (*Daemon, error) {
	stderr, out, embeddedChat := o.Logs, o.Out, o.EmbeddedChat
	logger, level := config.NewLeveledLogger(stderr, cfg)
	// The process's default logger too, for what logs through
	// slog.Default(); then LogLibp2pTo takes Go's log package (which
	// SetDefault pointed at the handler at info) with its own levels.
	slog.SetDefault(logger)
	peer.LogLibp2pTo(logger.Handler())
	reg, err := NewRegistry()
	if err != nil {
		return nil, err
	}
	opts, err := cfg.PeerOptions(string(h))
	if err != nil {
		return nil, err
	}
	opts = append(opts, peer.WithKeyFile(h.KeyFile()), peer.WithLogger(logger), peer.WithRegistry(reg),
		peer.WithActorOptions(actor.WithDeadLetterLog(cfg.DeadLetters.Keep, describeMessage(reg))))
	var prom *prometheus.Registry
	if cfg.Metrics != "" {
		prom = prometheus.NewRegistry()
		opts = append(opts, peer.WithPrometheus(prom))
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	node, err := peer.New(startCtx, opts...)
	if err != nil {
		return nil, err
	}
	d := &Daemon{home: h, cfg: cfg, node: node, reg: reg, started: time.Now(), out: out, embeddedChat: embeddedChat, version: o.Version, stopped: make(chan struct{}), log: logger, level: level}
	err = startBuiltins(node, cfg.Mesh, o.Version, d.started, out)
	if err == nil {
		d.stopEvents, err = reportPeers(node, out)
	}
	d.stopMemory, d.memoryRelease = startMemoryRelease(logger, prom)
	d.view = meshview.NewHub(d.sampleView)
	d.stopView = d.view.Start()
	view := meshview.NewHandler(d.view, d.deadLetters)
	if err == nil {
		d.ctl, err = control.Listen(h.Socket(), d.handle, view)
	}
	if err == nil && cfg.Metrics != "" {
		d.metrics, err = control.ServeMetrics(cfg.Metrics, prom)
	}
	if err == nil && cfg.UI != "" {
		d.ui, err = meshview.Serve(cfg.UI, view)
	}
	if err != nil {
		return nil, errors.Join(err, d.Close(ctx))
	}
	return d, nil
}

// Open takes h's lock, loads its configuration, lets edit change it
// (flags, a test's loopback; nil for none) and starts a daemon on it
// whose Close releases the lock.
func Open(ctx context.Context, h cli.Home, edit func(*config.Config) error, o Options) (*Daemon, error) {
	cfg, unlock, err := h.Open()
	if err != nil {
		return nil, err
	}
	if edit != nil {
		err = edit(&cfg)
	}
	var d *Daemon
	if err == nil {
		d, err = Start(ctx, h, cfg, o)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	d.unlock = unlock
	return d, nil
}

// Close stops the control socket, the HTTP servers and the node, then
// releases the home's lock if Open took it. Later calls return the
// first one's error.
func (d *Daemon) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		d.closeErr = d.close(ctx)
		if d.unlock != nil {
			d.unlock()
		}
	})
	return d.closeErr
}

func (d *Daemon) close(ctx context.Context) error {
	if d.ctl != nil {
		d.ctl.Close(ctx)
		os.Remove(d.home.Socket())
	}
	if d.metrics != nil {
		d.metrics.Close()
	}
	if d.ui != nil {
		d.ui.Close()
	}
	if d.stopView != nil {
		d.stopView()
	}
	if d.stopEvents != nil {
		d.stopEvents()
	}
	if d.stopMemory != nil {
		d.stopMemory()
	}
	return d.node.Close(ctx)
}

// reportPeers prints "joined <peer> (echo <rtt>)" when a peer connects (after
// asking its echo actor, which proves the actor protocols work both ways)
// and "left <peer>" when it goes; a peer that restarted before its old
// connection was seen to end (routing.EvtPeerRestarted) left and joined.
// The returned func stops it and waits.
func reportPeers(n *peer.Node, out io.Writer) (stop func(), err error) {
	sub, err := n.Host().EventBus().Subscribe([]any{new(event.EvtPeerConnectednessChanged), new(peer.EvtPeerRestarted)})
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	joined := func(id libp2ppeer.ID) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			echo, _ := peer.Ref(id, "echo")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := n.System().Ask(ctx, echo, "hello"); err != nil {
				fmt.Fprintf(out, "joined %s (echo failed: %s)\n", id, cli.Clean(err.Error()))
				return
			}
			fmt.Fprintf(out, "joined %s (echo %v)\n", id, time.Since(start).Round(time.Microsecond))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range sub.Out() {
			switch e := ev.(type) {
			case event.EvtPeerConnectednessChanged:
				switch e.Connectedness {
				case network.Connected:
					joined(e.Peer)
				case network.NotConnected:
					fmt.Fprintf(out, "left %s\n", e.Peer)
				}
			case peer.EvtPeerRestarted:
				fmt.Fprintf(out, "left %s\n", e.Peer)
				joined(e.Peer)
			}
		}
	}()
	return func() { _ = sub.Close(); wg.Wait() }, nil
}

// Node is the daemon's node.
func (d *Daemon) Node() *peer.Node { return d.node }

// Config is the configuration the daemon runs with.
func (d *Daemon) Config() config.Config { return d.cfg }

// Log is the daemon's logger.
func (d *Daemon) Log() *slog.Logger { return d.log }

// Started is when the daemon started.
func (d *Daemon) Started() time.Time { return d.started }

// Stopped is closed when 'troupe stop' asked the daemon to stop.
func (d *Daemon) Stopped() <-chan struct{} { return d.stopped }

// MetricsAddr is the metrics server's address, "" when none serves.
func (d *Daemon) MetricsAddr() string {
	if d.metrics == nil {
		return ""
	}
	return d.metrics.Addr().String()
}

// UIAddr is the mesh view's address, "" when none serves.
func (d *Daemon) UIAddr() string {
	if d.ui == nil {
		return ""
	}
	return d.ui.Addr().String()
}

// Loopback is an Open edit for tests and local tries: listen on
// 127.0.0.1 only, no mDNS, no DHT, so nothing leaves the machine.
func Loopback(cfg *config.Config) error {
	cfg.Listen, cfg.MDNS, cfg.DHT = []string{"/ip4/127.0.0.1/tcp/0"}, false, "off"
	return nil
}
