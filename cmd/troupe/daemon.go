package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/peer"
)

// Watch asks a daemon's "watcher" actor to monitor an actor and print a line
// when it stops: "down <ref> <reason>".
type Watch struct{ Ref string }

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func daemon(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home := fs.String("home", defaultHome(), "directory holding the identity key ($TROUPE_HOME)")
	var listen, connect, bootstrap listFlag
	fs.Var(&listen, "listen", "multiaddr to listen on (repeatable; default TCP and QUIC on all interfaces, random ports)")
	fs.Var(&connect, "connect", "multiaddr with /p2p/ of a peer to connect to at start (repeatable)")
	fs.Var(&bootstrap, "bootstrap", "multiaddr with /p2p/ of a DHT bootstrap peer (repeatable); turns on the DHT rendezvous for the mesh")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	mdnsOn := fs.Bool("mdns", true, "find peers of the same mesh on the LAN by multicast DNS")
	mesh := fs.String("mesh", "default", "mesh name: peers find each other per mesh (a-z, 0-9, '-')")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if err := discovery.CheckMesh(*mesh); err != nil {
		fmt.Fprintf(stderr, "troupe daemon: -mesh: %v\n", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "troupe daemon: -log-level %q: use debug, info, warn or error\n", *logLevel)
		return 2
	}
	peers, ok := parsePeers("-connect", connect, stderr)
	if !ok {
		return 2
	}
	boots, ok := parsePeers("-bootstrap", bootstrap, stderr)
	if !ok {
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	reg, err := codec.NewRegistry()
	if err == nil {
		err = codec.Register[Watch](reg, "troupe.Watch")
	}
	if err != nil {
		fmt.Fprintln(stderr, "troupe daemon:", err)
		return 1
	}
	opts := []peer.Option{peer.WithKeyFile(filepath.Join(*home, "identity.key")), peer.WithLogger(logger), peer.WithRegistry(reg)}
	if len(listen) > 0 {
		opts = append(opts, peer.WithListenAddrs(listen...))
	}
	opts = append(opts, peer.WithMesh(*mesh), peer.WithMDNS(*mdnsOn))
	if len(boots) > 0 {
		opts = append(opts, peer.WithDHT(boots...))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	node, err := peer.New(startCtx, opts...)
	if err != nil {
		fmt.Fprintln(stderr, "troupe daemon:", err)
		return 1
	}
	out := &lockedWriter{w: stdout}
	err = startBuiltins(node, out)
	var stopEvents func()
	if err == nil {
		stopEvents, err = reportPeers(node, out)
	}
	fmt.Fprintf(out, "peer %s\n", node.ID())
	for _, a := range node.Addrs() {
		fmt.Fprintf(out, "listen %s\n", a)
	}
	for _, ai := range peers {
		if err != nil {
			break
		}
		if err = node.Connect(startCtx, ai); err == nil {
			fmt.Fprintf(out, "connected %s\n", ai.ID)
		}
	}
	if err == nil {
		fmt.Fprintln(out, "ready")
		<-ctx.Done()
	}
	if stopEvents != nil {
		stopEvents()
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	err = errors.Join(err, node.Close(closeCtx))
	if err != nil {
		fmt.Fprintln(stderr, "troupe daemon:", err)
		return 1
	}
	return 0
}

// parsePeers parses multiaddrs with a /p2p/ suffix given to flag name.
func parsePeers(name string, addrs []string, stderr io.Writer) ([]libp2ppeer.AddrInfo, bool) {
	peers := make([]libp2ppeer.AddrInfo, 0, len(addrs))
	for _, s := range addrs {
		m, err := ma.NewMultiaddr(s)
		if err != nil {
			fmt.Fprintf(stderr, "troupe daemon: %s %q: %v\n", name, s, err)
			return nil, false
		}
		ai, err := libp2ppeer.AddrInfoFromP2pAddr(m)
		if err != nil {
			fmt.Fprintf(stderr, "troupe daemon: %s %q needs a /p2p/<peer ID> suffix\n", name, s)
			return nil, false
		}
		peers = append(peers, *ai)
	}
	return peers, true
}

// startBuiltins spawns the daemon's built-in actors: echo replies with what
// it got; watcher monitors the actors it is told to and prints their Down.
func startBuiltins(n *peer.Node, out io.Writer) error {
	sys := n.System()
	if _, err := sys.Spawn("echo", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) { c.Reply(m); c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		return err
	}
	_, err := sys.Spawn("watcher", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) {
			switch m := m.(type) {
			case Watch:
				if ref, err := actor.ParseRef(m.Ref); err == nil {
					c.Monitor(ref)
					fmt.Fprintf(out, "watching %s\n", ref)
				} else {
					fmt.Fprintf(out, "bad watch %q: %v\n", m.Ref, err)
				}
				c.Reply(true)
			case actor.Down:
				fmt.Fprintf(out, "down %s %v\n", m.Ref, m.Reason)
			}
			c.Receive(h)
		})
		c.Receive(h)
	})
	return err
}

// reportPeers prints "joined <peer> (echo <rtt>)" when a peer connects (after
// asking its echo actor, which proves the actor protocols work both ways)
// and "left <peer>" when it goes. The returned func stops it and waits.
func reportPeers(n *peer.Node, out io.Writer) (stop func(), err error) {
	sub, err := n.Host().EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range sub.Out() {
			e := ev.(event.EvtPeerConnectednessChanged)
			switch e.Connectedness {
			case network.Connected:
				wg.Add(1)
				go func() {
					defer wg.Done()
					echo, _ := peer.Ref(e.Peer, "echo")
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					start := time.Now()
					if _, err := n.System().Ask(ctx, echo, "hello"); err != nil {
						fmt.Fprintf(out, "joined %s (echo failed: %v)\n", e.Peer, err)
						return
					}
					fmt.Fprintf(out, "joined %s (echo %v)\n", e.Peer, time.Since(start).Round(time.Microsecond))
				}()
			case network.NotConnected:
				fmt.Fprintf(out, "left %s\n", e.Peer)
			}
		}
	}()
	return func() { _ = sub.Close(); wg.Wait() }, nil
}

func defaultHome() string {
	if h := os.Getenv("TROUPE_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".troupe")
	}
	return ".troupe"
}

// lockedWriter serializes lines written from several actors.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
