package peer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Hole punching that tries again. libp2p's DCUtR service, when the host
// runs it (libp2p.EnableHolePunching), makes one round of three attempts
// when a relayed connection comes in, and never another on that
// connection. The node runs the service itself, so that it can call its
// DirectConnect: a round that failed is tried again on the same relayed
// connection after punchRetryDelays, and at once (within the same bound)
// when the node's own addresses change (libp2p's address event, or its
// interface addresses, which the node looks at every punchIfacePoll
// while a retry waits). Every attempt is counted by the
// holePunches tracer (troupe_hole_punches_total / _succeeded_total).
//
// Two more changes against the host's own service:
//   - Before punching, libp2p dials the other peer directly when it knows
//     a public address of it, for up to 5 s. An IPv6 laptop behind a
//     stateful firewall advertises its global address, which the firewall
//     silently drops from outside: every first round waited those 5 s
//     (direct 5.2–5.5 s after the first relayed ask). A peer that
//     advertises relay addresses says it is not reachable directly, so the
//     service does not see its direct addresses for that dial
//     (punchPeerstore); the punch itself uses the addresses exchanged in
//     the DCUtR messages, as before.
//   - The addresses the service offers for a punch are the host's public
//     listen addresses and the addresses recent peers observed for us
//     (identify), as libp2p's own service does with one observer.

// punchRetryDelays are the waits before each round the node starts again
// on one relayed connection (after libp2p's first round, which starts as
// the connection opens): bounded, growing, so a pair behind NATs that
// never allow a punch (symmetric × symmetric) costs a handful of rounds.
var punchRetryDelays = []time.Duration{10 * time.Second, 30 * time.Second, 90 * time.Second, 5 * time.Minute}

// punchObservedMax bounds the observed addresses kept (a hostile peer can
// tell us any address; the newest few are kept).
const punchObservedMax = 8

// punchIfacePoll is how often the node looks at its interface addresses
// while a retry waits. libp2p's own address event tells of a new or lost
// interface address up to a minute late (v0.52 caches interface
// addresses for a minute and looks again every 5 s): a laptop whose LAN
// address changed waited that long for its round (TestNATMatrix's
// renumbered pair, 2026-12-07).
const punchIfacePoll = 2 * time.Second

// punchRetryMax bounds the peers whose relayed connections get retries
// at once (each holds a goroutine and a map entry for up to ~7 minutes):
// peers can come in through relays under any number of identities. Past
// it, a relayed connection gets libp2p's one round only.
const punchRetryMax = 64

// puncher runs the DCUtR service and its retries. Its mutex guards
// retrying and observed; it is a leaf lock.
type puncher struct {
	h      host.Host
	svc    *holepunch.Service
	notify *network.NotifyBundle // tells of relayed connections coming in
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// ifaces describes the host's interface addresses (nil: not
	// watched).
	ifaces func() string
	// began tells events that a retry began, so that it polls ifaces
	// (it polls only while a retry waits: no wake-ups while idle).
	began chan struct{}

	mu       sync.Mutex
	closed   bool                            // no retries start once set
	retrying map[libp2ppeer.ID]chan struct{} // per peer: kicked on an address change
	observed []ma.Multiaddr                  // newest last, public only
}

// startPuncher starts the hole punching service on h with tracer tr.
func startPuncher(h host.Host, tr holepunch.EventTracer) (*puncher, error) {
	idh, ok := h.(interface{ IDService() identify.IDService })
	if !ok {
		return nil, fmt.Errorf("peer: hole punching: host %T has no identify service", h)
	}
	p := &puncher{h: h, retrying: make(map[libp2ppeer.ID]chan struct{}), ifaces: func() string { return ifaceAddrs(h) }, began: make(chan struct{}, 1)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	sub, err := h.EventBus().Subscribe([]any{new(event.EvtPeerIdentificationCompleted), new(event.EvtLocalAddressesUpdated)})
	if err != nil {
		p.cancel()
		return nil, fmt.Errorf("peer: hole punching: %w", err)
	}
	svc, err := holepunch.NewService(punchHost{h}, idh.IDService(), p.addrs, holepunch.WithTracer(tr))
	if err != nil {
		p.cancel()
		_ = sub.Close()
		return nil, fmt.Errorf("peer: hole punching: %w", err)
	}
	p.svc = svc
	p.notify = &network.NotifyBundle{ConnectedF: p.connected}
	h.Network().Notify(p.notify)
	p.wg.Go(func() { p.events(sub) })
	return p, nil
}

// close stops the retries and the service (whose Close, in v0.52, has
// nothing to report).
func (p *puncher) close() {
	if p == nil {
		return
	}
	p.h.Network().StopNotify(p.notify)
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	_ = p.svc.Close() // first: it ends a round a retry waits in
	p.wg.Wait()
}

// addrs are the addresses the service offers for a punch: public listen
// addresses and observed ones, never relay addresses.
func (p *puncher) addrs() []ma.Multiaddr {
	var own []ma.Multiaddr
	if a, ok := p.h.(interface{ AllAddrs() []ma.Multiaddr }); ok {
		own = a.AllAddrs()
	}
	p.mu.Lock()
	own = append(own, p.observed...)
	p.mu.Unlock()
	return punchAddrs(own)
}

// punchAddrs keeps the public, direct addresses of addrs, once each.
func punchAddrs(addrs []ma.Multiaddr) []ma.Multiaddr {
	addrs = slices.DeleteFunc(slices.Clone(addrs), func(a ma.Multiaddr) bool { return isCircuit(a) || !manet.IsPublicAddr(a) })
	return ma.Unique(addrs)
}

// ifaceAddrs describes h's listen addresses on its interfaces as they are
// now (the network's InterfaceListenAddresses caches them for a minute),
// or is "" when they cannot be read.
func ifaceAddrs(h host.Host) string {
	addrs, _ := manet.ResolveUnspecifiedAddresses(h.Network().ListenAddresses(), nil)
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// events notes observed addresses and kicks the retries when our own
// addresses change: at libp2p's address event, and when the interface
// addresses differ from those seen when the first retry of a busy spell
// began or at the last poll since. The poll's ticker runs only while a
// retry waits: began starts it, a poll that finds none stops it.
func (p *puncher) events(sub event.Subscription) {
	defer func() { _ = sub.Close() }()
	var ticker *time.Ticker
	var poll <-chan time.Time // nil while the ticker is stopped
	if p.ifaces != nil {
		ticker = time.NewTicker(punchIfacePoll)
		ticker.Stop() // until a retry begins
		defer ticker.Stop()
	}
	last := "" // the interface addresses at the last look while a retry waited
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.began:
			if ticker != nil && poll == nil {
				last = p.ifaces()
				ticker.Reset(punchIfacePoll)
				poll = ticker.C
			}
		case <-poll:
			p.mu.Lock()
			waiting := len(p.retrying) > 0
			p.mu.Unlock()
			if !waiting {
				ticker.Stop() // a retry that begins later sends began
				poll = nil
				continue
			}
			now := p.ifaces()
			if now == "" {
				continue // not read this time: nothing to compare
			}
			if last != "" && now != last {
				p.kick()
			}
			last = now
		case e := <-sub.Out():
			switch e := e.(type) {
			case event.EvtPeerIdentificationCompleted:
				if a := e.ObservedAddr; a != nil && !isCircuit(a) && manet.IsPublicAddr(a) {
					p.mu.Lock()
					p.observed = observe(p.observed, a, punchObservedMax)
					p.mu.Unlock()
				}
			case event.EvtLocalAddressesUpdated:
				p.kick()
			}
		}
	}
}

// kick wakes every retry waiting.
func (p *puncher) kick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, kick := range p.retrying {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}

// observe adds a to the newest end of list, dropping its older copy and
// the oldest beyond max.
func observe(list []ma.Multiaddr, a ma.Multiaddr, max int) []ma.Multiaddr {
	list = slices.DeleteFunc(list, a.Equal)
	list = append(list, a)
	if len(list) > max {
		list = slices.Delete(list, 0, len(list)-max)
	}
	return list
}

// connected starts the retries for a relayed connection that came in:
// its side starts DCUtR rounds (libp2p's first one starts now).
func (p *puncher) connected(_ network.Network, c network.Conn) {
	if c.Stat().Direction != network.DirInbound || !isCircuit(c.RemoteMultiaddr()) {
		return
	}
	id := c.RemotePeer()
	kick, ok := p.track(id)
	if !ok {
		return
	}
	go func() {
		defer p.wg.Done()
		defer func() {
			p.mu.Lock()
			delete(p.retrying, id)
			p.mu.Unlock()
		}()
		p.retry(id, kick)
	}()
}

// track enters id among the peers retried and adds the goroutine that
// will retry to wg, returning its kick channel; false when id is retried
// already, the puncher is closed or punchRetryMax peers are retried.
func (p *puncher) track(id libp2ppeer.ID) (chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.retrying[id]; ok || p.closed || len(p.retrying) >= punchRetryMax {
		return nil, false
	}
	kick := make(chan struct{}, 1)
	p.retrying[id] = kick
	select {
	case p.began <- struct{}{}: // the interface poll starts, if stopped
	default: // one is pending already
	}
	p.wg.Add(1) // under mu: close sets closed under it before its Wait
	return kick, true
}

// retry tries again, after each of punchRetryDelays or at a kick, while
// the peer is connected through relays only.
func (p *puncher) retry(id libp2ppeer.ID, kick <-chan struct{}) {
	for _, d := range punchRetryDelays {
		t := time.NewTimer(d)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-kick:
			t.Stop()
		}
		if !p.relayedOnly(id) {
			return // direct now, or gone
		}
		// DirectConnect waits until the service has addresses to offer;
		// it serves DCUtR from then on.
		if !slices.Contains(p.h.Mux().Protocols(), holepunch.Protocol) {
			continue
		}
		// A round still going (libp2p's first one takes up to three
		// dials of several seconds each) is waited for; a failed one is
		// counted by the tracer, and the next delay tries again.
		for err := p.svc.DirectConnect(id); errors.Is(err, holepunch.ErrHolePunchActive); err = p.svc.DirectConnect(id) {
			t := time.NewTimer(time.Second)
			select {
			case <-p.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// relayedOnly reports whether every connection to id is relayed (and
// there is one).
func (p *puncher) relayedOnly(id libp2ppeer.ID) bool {
	conns := p.h.Network().ConnsToPeer(id)
	for _, c := range conns {
		if !isCircuit(c.RemoteMultiaddr()) {
			return false
		}
	}
	return len(conns) > 0
}

// punchHost is the host as the DCUtR service sees it: its peerstore
// hides the direct addresses of peers that advertise relay addresses.
type punchHost struct{ host.Host }

// Peerstore implements host.Host.
func (h punchHost) Peerstore() peerstore.Peerstore { return punchPeerstore{h.Host.Peerstore()} }

// punchPeerstore is the peerstore of punchHost. The service reads a
// peer's addresses only to decide whether to dial it directly before
// punching.
type punchPeerstore struct{ peerstore.Peerstore }

// Addrs implements peerstore.Peerstore.
func (ps punchPeerstore) Addrs(id libp2ppeer.ID) []ma.Multiaddr {
	return dialBeforePunch(ps.Peerstore.Addrs(id))
}

// dialBeforePunch is what the service may dial before punching, of a
// peer's addresses: only its relay addresses (which it does not dial
// directly) when it has any, since a peer that reserved relay slots is
// not reachable directly; all of them otherwise.
func dialBeforePunch(addrs []ma.Multiaddr) []ma.Multiaddr {
	if !slices.ContainsFunc(addrs, isCircuit) {
		return addrs
	}
	return slices.DeleteFunc(slices.Clone(addrs), func(a ma.Multiaddr) bool { return !isCircuit(a) })
}
