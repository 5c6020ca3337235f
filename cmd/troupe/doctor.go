package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/zeroconf/v2"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/peer"
)

// 'troupe doctor' says why a peer finds no others: what the home's
// configuration lets through, which interfaces can carry mDNS, whether
// mDNS answers on this machine (the daemon's own announcement) and on
// the LAN (other peers'), and what the running daemon could not dial.

// doctorReport is what 'troupe doctor' found (also its --json).
type doctorReport struct {
	Home       string                `json:"home"`
	Mesh       string                `json:"mesh"`
	PSK        bool                  `json:"private_network"`
	Allowlist  int                   `json:"allowlist"`
	MDNS       bool                  `json:"mdns"`
	DHT        string                `json:"dht"`
	Bootstrap  int                   `json:"bootstrap"`
	Interfaces []ifaceReport         `json:"multicast_interfaces"`
	Daemon     *control.DoctorResult `json:"daemon"`     // nil: none runs on the home
	Probe      *mdnsProbe            `json:"mdns_probe"` // nil: not probed
	Hints      []string              `json:"hints"`
}

type ifaceReport struct {
	Name  string   `json:"name"`
	Addrs []string `json:"addrs"`
}

// mdnsProbe is what an mDNS query for the mesh's service heard.
type mdnsProbe struct {
	HeardSelf bool     `json:"heard_self"` // the daemon's own announcement
	Others    []string `json:"others"`     // other peers of the mesh
	Err       string   `json:"error,omitempty"`
}

func doctorCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("doctor", "", "say why this peer finds no others: configuration, multicast interfaces, an mDNS query, and what the daemon could not dial", stderr)
	f := addClientFlags(fs, true)
	probe := fs.Duration("mdns-wait", 3*time.Second, "how long the mDNS query listens for answers (0: send none)")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	h := cli.Home(*f.home)
	if err := h.CheckPrivate(); err != nil {
		return cli.Fail(stderr, "doctor", err)
	}
	cfg, _, err := config.Load(h.ConfigFile())
	if err != nil {
		return cli.Fail(stderr, "doctor", err)
	}
	ctx, stop := signalContext()
	defer stop()
	r := doctorReport{Home: string(h), Mesh: cfg.Mesh, PSK: cfg.PSKFile != "", Allowlist: len(cfg.Allowlist),
		MDNS: cfg.MDNS, DHT: cfg.DHT, Bootstrap: len(cfg.Bootstrap), Interfaces: multicastInterfaces()}
	var dd control.DoctorResult
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = control.Call(callCtx, h, control.Request{Cmd: "doctor"}, &dd, false)
	cancel()
	switch {
	case err == nil:
		r.Daemon, r.Mesh = &dd, dd.Mesh
	case !errors.Is(err, control.ErrNoDaemon):
		return cli.Fail(stderr, "doctor", err)
	}
	if cfg.MDNS && *probe > 0 && len(r.Interfaces) > 0 {
		r.Probe = probeMDNS(ctx, r.Mesh, *probe, r.Daemon)
	}
	r.Hints = doctorHints(r)
	if *f.json {
		b, _ := json.Marshal(r)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	printDoctor(stdout, r)
	return 0
}

// multicastInterfaces returns the interfaces that are up, can multicast
// and have an address other than a loopback one: those mDNS can use.
func multicastInterfaces() []ifaceReport {
	ifaces, _ := net.Interfaces()
	out := []ifaceReport{}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagMulticast == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		r := ifaceReport{Name: ifc.Name, Addrs: []string{}}
		for _, a := range addrs {
			r.Addrs = append(r.Addrs, a.String())
		}
		if len(r.Addrs) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// probeMDNS queries the mesh's mDNS service for wait and reports whom it
// heard: the daemon d (nil: none runs) and other peers.
func probeMDNS(ctx context.Context, mesh string, wait time.Duration, d *control.DoctorResult) *mdnsProbe {
	p := &mdnsProbe{Others: []string{}}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	entries := make(chan *zeroconf.ServiceEntry, 64)
	done := make(chan error, 1)
	go func() { done <- zeroconf.Browse(ctx, peer.MDNSService(mesh), "local", entries) }()
	heard := map[string]bool{}
	for e := range entries { // Browse closes entries when ctx ends
		for _, txt := range e.Text {
			s, ok := strings.CutPrefix(txt, "dnsaddr=")
			if !ok {
				continue
			}
			a, err := ma.NewMultiaddr(s)
			if err != nil {
				continue
			}
			if ai, err := libp2ppeer.AddrInfoFromP2pAddr(a); err == nil {
				heard[ai.ID.String()] = true
			}
		}
	}
	if err := <-done; err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		p.Err = err.Error()
	}
	for id := range heard {
		if d != nil && id == d.ID {
			p.HeardSelf = true
			continue
		}
		p.Others = append(p.Others, id)
	}
	slices.Sort(p.Others)
	return p
}

// doctorHints are the likely reasons, one line each, for what r shows.
func doctorHints(r doctorReport) []string {
	var h []string
	switch {
	case r.Daemon == nil:
		h = append(h, "no daemon runs on this home: start one with 'troupe daemon'")
	case r.Daemon.Peers > 0:
		h = append(h, fmt.Sprintf("connected to %d peers", r.Daemon.Peers))
	}
	if !r.MDNS {
		h = append(h, `mDNS is off ("mdns": false): peers on the LAN are not looked for`)
	} else if len(r.Interfaces) == 0 {
		h = append(h, "no interface can carry multicast: mDNS finds nobody; use -connect <address> or a bootstrap peer")
	}
	if p := r.Probe; p != nil {
		if p.Err != "" {
			h = append(h, "the mDNS query failed: "+cli.Clean(p.Err))
		}
		if r.Daemon != nil && !p.HeardSelf {
			h = append(h, "the daemon's own mDNS announcement was not heard: a firewall may block UDP 5353, or (macOS) the terminal lacks the Local Network permission")
		}
		if len(p.Others) == 0 && (r.Daemon == nil || r.Daemon.Peers == 0) {
			h = append(h, fmt.Sprintf(`no other peer of mesh %q answered on the LAN: the others may use another mesh name, or the network isolates its clients (guest or café Wi-Fi); then use -connect <address>`, r.Mesh))
		}
	}
	if r.PSK {
		h = append(h, "a private-network key is in force: only peers with the same key can connect (TCP only)")
	}
	if r.Allowlist > 0 {
		h = append(h, fmt.Sprintf("an allowlist of %d peers is in force: no other peer can connect", r.Allowlist))
	}
	if r.Daemon != nil && len(r.Daemon.DialFailures) > 0 {
		h = append(h, fmt.Sprintf("%d discovered peers could not be dialed (below)", len(r.Daemon.DialFailures)))
	}
	if r.Daemon != nil && !r.Daemon.Public {
		h = append(h, "this peer listens on private addresses only: peers beyond this network reach it only through a port forward")
	}
	return h
}

func printDoctor(w io.Writer, r doctorReport) {
	fmt.Fprintf(w, "home %s\nmesh %s\n", r.Home, r.Mesh)
	fmt.Fprintf(w, "mdns %v, dht %s, bootstrap peers %d, private network %v, allowlist %d\n", r.MDNS, r.DHT, r.Bootstrap, r.PSK, r.Allowlist)
	for _, i := range r.Interfaces {
		fmt.Fprintf(w, "multicast interface %s %s\n", i.Name, strings.Join(i.Addrs, " "))
	}
	if d := r.Daemon; d != nil {
		fmt.Fprintf(w, "daemon %s, %d peers, reachability %s\n", d.ID, d.Peers, d.Reachability)
		for _, a := range d.Addrs {
			fmt.Fprintf(w, "listen %s\n", a)
		}
		for _, f := range d.DialFailures {
			fmt.Fprintf(w, "undialable %s (%s ago) %s: %s\n", f.Peer, f.Ago, strings.Join(f.Addrs, " "), f.Err)
		}
	}
	if p := r.Probe; p != nil {
		fmt.Fprintf(w, "mdns query: heard the daemon %v, %d other peers\n", p.HeardSelf, len(p.Others))
		for _, o := range p.Others {
			fmt.Fprintf(w, "mdns heard %s\n", o)
		}
	}
	for _, h := range r.Hints {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}
