package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/meshview"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// daemonFlags are the flags of 'troupe daemon'; each one that is given
// overrides the matching config.json field.
type daemonFlags struct {
	home                               *string
	listen, connect, bootstrp          cli.ListFlag
	logLevel, logFormat, mesh, metrics *string
	ui                                 *string
	mdns, relayService, timestamps     *bool
}

func daemon(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("daemon", "", "run the peer: a libp2p host with the built-in actors echo, info and watcher, and the control socket for the other commands", stderr)
	var f daemonFlags
	f.home = cli.HomeFlag(fs)
	fs.Var(&f.listen, "listen", "multiaddr to listen on (repeatable; replaces config listen)")
	fs.Var(&f.connect, "connect", "multiaddr with /p2p/ of a peer to connect to at start (repeatable)")
	fs.Var(&f.bootstrp, "bootstrap", "multiaddr with /p2p/ of a DHT bootstrap peer (repeatable; added to config bootstrap)")
	f.logLevel = fs.String("log-level", "", "debug, info, warn or error (config log_level)")
	f.logFormat = fs.String("log-format", "", "text or json (config log_format)")
	f.relayService = fs.Bool("relay-service", false, "serve as a circuit relay and AutoNAT server for the mesh (config relay_service)")
	f.mdns = fs.Bool("mdns", true, "find peers of the same mesh on the LAN by multicast DNS (config mdns)")
	f.mesh = fs.String("mesh", "", "mesh name: peers find each other per mesh, a-z, 0-9, '-' (config mesh)")
	f.metrics = fs.String("metrics", "", "serve Prometheus metrics at http://HOST:PORT/metrics (config metrics)")
	f.timestamps = fs.Bool("timestamps", isTerminal(stdout), "start each line of output (joined, left, ...) with the time; on by default on a terminal")
	f.ui = fs.String("ui", "", "serve the live mesh view at http://HOST:PORT/, HOST a loopback address (config ui)")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	// Flags are checked before the home is touched.
	var connect []libp2ppeer.AddrInfo
	for _, s := range f.connect {
		ai, err := config.ParsePeerAddr(s)
		if err != nil {
			return cli.Fail(stderr, "daemon", fmt.Errorf("%w: -connect: %w", config.ErrUsage, err))
		}
		connect = append(connect, ai)
	}
	probe := config.Default()
	if err := f.apply(fs, &probe); err != nil {
		return cli.Fail(stderr, "daemon", err)
	}
	h := cli.Home(*f.home)
	cfg, unlock, err := h.Open()
	if err != nil {
		return cli.Fail(stderr, "daemon", err)
	}
	defer unlock()
	if err := f.apply(fs, &cfg); err != nil {
		return cli.Fail(stderr, "daemon", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &cli.LockedWriter{W: stdout}
	if *f.timestamps {
		out.Stamp = func() string { return time.Now().Format(eventTimeFormat) + " " }
	}
	d, err := startDaemon(ctx, h, cfg, stderr, out, false)
	if err != nil {
		return cli.Fail(stderr, "daemon", err)
	}
	fmt.Fprintf(out, "peer %s\n", d.node.ID())
	fmt.Fprintf(out, "mesh %s\n", cfg.Mesh)
	for _, a := range d.node.Addrs() {
		fmt.Fprintf(out, "listen %s\n", a)
	}
	fmt.Fprintf(out, "control %s\n", h.Socket())
	if d.metrics != nil {
		fmt.Fprintf(out, "metrics http://%s/metrics\n", d.metrics.Addr())
	}
	if d.ui != nil {
		fmt.Fprintf(out, "ui http://%s/\n", d.ui.Addr())
	}
	for _, ai := range connect {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err = d.node.Connect(cctx, ai); err == nil {
			fmt.Fprintf(out, "connected %s\n", ai.ID)
		}
		cancel()
		if err != nil {
			break
		}
	}
	if err == nil {
		fmt.Fprintln(out, "ready")
		lonely := time.AfterFunc(lonelyAfter, func() {
			if len(d.node.Peers()) == 0 {
				fmt.Fprintln(out, lonelyHintFor(cfg, multicastInterfaces(), len(d.node.DialFailures())))
			}
		})
		defer lonely.Stop()
		why := "troupe stop"
		select {
		case <-ctx.Done():
			why = "signal"
			if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
				why = c.Error()
			}
		case <-d.stopped:
		}
		d.log.Info("daemon stopping", "reason", why, "peer", d.node.ID().String())
	} else {
		d.log.Error("daemon stopping", "reason", err.Error())
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	if err = errors.Join(err, d.close(closeCtx)); err != nil {
		return cli.Fail(stderr, "daemon", err)
	}
	d.log.Info("daemon stopped", "uptime", time.Since(d.started).Round(time.Millisecond).String())
	return 0
}

// apply overrides cfg with the flags that were given and validates it.
func (f *daemonFlags) apply(fs *cli.Flags, cfg *config.Config) error {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "listen":
			cfg.Listen = f.listen
		case "bootstrap":
			cfg.Bootstrap = append(cfg.Bootstrap, f.bootstrp...)
		case "log-level":
			cfg.LogLevel = *f.logLevel
		case "log-format":
			cfg.LogFormat = *f.logFormat
		case "mdns":
			cfg.MDNS = *f.mdns
		case "mesh":
			cfg.Mesh = *f.mesh
		case "metrics":
			cfg.Metrics = *f.metrics
		case "ui":
			cfg.UI = *f.ui
		case "relay-service":
			cfg.RelayService = *f.relayService
		}
	})
	return cfg.Validate()
}

// runningDaemon is a started daemon: the node, its built-in actors, the
// control socket and the metrics server.
type runningDaemon struct {
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
	stopped      chan struct{} // closed by 'troupe stop'
	stopOnce     sync.Once
}

// startDaemon starts the node described by cfg with its control socket.
// A chat's own peer (embeddedChat) serves every request but chat: the
// chats of other terminals would end with it.
func startDaemon(ctx context.Context, h cli.Home, cfg config.Config, stderr, out io.Writer, embeddedChat bool) (*runningDaemon, error) {
	logger, level := config.NewLeveledLogger(stderr, cfg)
	// The process's default logger too, for what logs through
	// slog.Default(); then LogLibp2pTo takes Go's log package (which
	// SetDefault pointed at the handler at info) with its own levels.
	slog.SetDefault(logger)
	peer.LogLibp2pTo(logger.Handler())
	reg, err := newRegistry()
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
	d := &runningDaemon{home: h, cfg: cfg, node: node, reg: reg, started: time.Now(), out: out, embeddedChat: embeddedChat, stopped: make(chan struct{}), log: logger, level: level}
	err = startBuiltins(node, cfg.Mesh, d.started, out)
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
		return nil, errors.Join(err, d.close(ctx))
	}
	return d, nil
}

// close stops the control socket, the HTTP servers and the node.
func (d *runningDaemon) close(ctx context.Context) error {
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

// eventTimeFormat is the time of a daemon's output lines with
// -timestamps: slog's, to the millisecond.
const eventTimeFormat = "2006-01-02T15:04:05.000Z07:00"
