package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/daemon"
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

func daemonCmd(args []string, stdout, stderr io.Writer) int {
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &cli.LockedWriter{W: stdout}
	if *f.timestamps {
		out.Stamp = func() string { return time.Now().Format(eventTimeFormat) + " " }
	}
	apply := func(cfg *config.Config) error { return f.apply(fs, cfg) }
	d, err := daemon.Open(ctx, h, apply, daemon.Options{Logs: stderr, Out: out, Version: buildVersion()})
	if err != nil {
		return cli.Fail(stderr, "daemon", err)
	}
	cfg := d.Config()
	fmt.Fprintf(out, "peer %s\n", d.Node().ID())
	fmt.Fprintf(out, "mesh %s\n", cfg.Mesh)
	for _, a := range d.Node().Addrs() {
		fmt.Fprintf(out, "listen %s\n", a)
	}
	fmt.Fprintf(out, "control %s\n", h.Socket())
	if a := d.MetricsAddr(); a != "" {
		fmt.Fprintf(out, "metrics http://%s/metrics\n", a)
	}
	if a := d.UIAddr(); a != "" {
		fmt.Fprintf(out, "ui http://%s/\n", a)
	}
	for _, ai := range connect {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err = d.Node().Connect(cctx, ai); err == nil {
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
			if len(d.Node().Peers()) == 0 {
				fmt.Fprintln(out, lonelyHintFor(cfg, multicastInterfaces(), len(d.Node().DialFailures())))
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
		case <-d.Stopped():
		}
		d.Log().Info("daemon stopping", "reason", why, "peer", d.Node().ID().String())
	} else {
		d.Log().Error("daemon stopping", "reason", err.Error())
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	if err = errors.Join(err, d.Close(closeCtx)); err != nil {
		return cli.Fail(stderr, "daemon", err)
	}
	d.Log().Info("daemon stopped", "uptime", time.Since(d.Started()).Round(time.Millisecond).String())
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

// eventTimeFormat is the time of a daemon's output lines with
// -timestamps: slog's, to the millisecond.
const eventTimeFormat = "2006-01-02T15:04:05.000Z07:00"
