package redial

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
)

// Redialing. A peer the node depends on that disconnects — one the
// application connected to (Config.Pinned), a bootstrap peer, or one the
// liveness prober declared gone (it was silent, not trimmed) — is dialed
// again with backoff until it is back: redialDelay(0), redialDelay(1) ...
// apart, each dial bounded by redialDialTimeout, at most redialFast
// times; after that a pinned or bootstrap peer is tried every
// redialSlow, any other peer is given up. libp2p's own dial backoff (5 s
// and growing with each failure, up to 5 minutes) is cleared before each
// try: after a partition it would keep the peer, and every message to
// it, away long after the heal. A peer the budget trimmed is never
// redialed here (it was neither pinned nor declared gone); any but a
// pinned one, bootstrap peers included, only while the node holds fewer
// than Connections.Low peers, so that a redial never undoes a trim.
// So after a heal a redialed peer is back within redialCap +
// redialDialTimeout (≤ 4.5 s), redialDefer more for the later side of a
// mutual declaration (below).
//
// Two peers that declared each other gone redial each other, and over
// TCP each dials from its listening port (SO_REUSEPORT): both SYNs carry
// the same four-tuple, and when they cross, TCP's simultaneous open makes
// one connection on which both sides are the initiator, whose security
// handshake fails on both (go-libp2p does not break the tie); the next
// tries can cross again. Measured in TestChaos over a 0.2–0.3 s round
// trip: asks back 2.4 s and 9.4 s after the heal instead of ~1.5 s. So
// of two such peers the one with the greater peer ID waits redialDefer
// before its first try (redialDeferral), leaving the other's first dial
// alone on the wire. Only the first: when the partition outlasts them,
// the two sides' later dials (up to redialDialTimeout each) overlap, and
// a dial pending on one side takes the other's SYN as a simultaneous
// open all the same. So heals are faster on the whole, not always.

const (
	redialBase        = 250 * time.Millisecond
	redialCap         = 2 * time.Second
	redialDialTimeout = 2500 * time.Millisecond
	redialFast        = 60
	redialSlow        = 30 * time.Second
	redialDefer       = redialCap
)

// redialDeferral is the extra wait before the first redial of p by self:
// redialDefer when self declared p gone (p then likely declared self
// too, and redials it) and self's ID is the greater, else none.
func redialDeferral(self, p libp2ppeer.ID, lost bool) time.Duration {
	if lost && self > p {
		return redialDefer
	}
	return 0
}

// redialDelay returns the wait before try n (from 0) of a redial:
// redialBase·2ⁿ capped at redialCap, with jitter taking off up to a
// half (j in [0, 1)) so that peers cut together do not redial in step;
// after redialFast tries, redialSlow.
func redialDelay(n int, j float64) time.Duration {
	if n >= redialFast {
		return redialSlow
	}
	d := min(redialBase<<min(n, 16), redialCap)
	return d - time.Duration(float64(d/2)*j)
}

// Config is what the redialer needs of its node.
type Config struct {
	Host      host.Host
	Bootstrap []libp2ppeer.AddrInfo // redialed whatever the tries, below the budget
	// Pinned reports whether the application connected to p (redialed
	// for good, whatever the budget).
	Pinned func(p libp2ppeer.ID) bool
	// BudgetFull reports whether the node holds Connections.Low peers.
	BudgetFull func() bool
	// Connect dials a peer as the node does.
	Connect func(context.Context, libp2ppeer.AddrInfo) error
	// Closing reports whether the node's Close began.
	Closing func() bool
}

// Redialer redials the peers of a node that must come back. Its mutex
// guards active and lost; it is held over Config's Pinned and Closing,
// so it is taken before the connection manager's lock (doc.go).
type Redialer struct {
	cfg    Config
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	active map[libp2ppeer.ID]bool // peers being redialed
	lost   map[libp2ppeer.ID]bool // declared gone by the prober, not yet redialed
}

// Start watches the disconnections of cfg.Host's peers until Close.
func Start(cfg Config) (*Redialer, error) {
	sub, err := cfg.Host.EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Redialer{cfg: cfg, ctx: ctx, stop: cancel, active: map[libp2ppeer.ID]bool{}, lost: map[libp2ppeer.ID]bool{}}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-sub.Out():
				e := ev.(event.EvtPeerConnectednessChanged)
				if e.Connectedness == network.NotConnected {
					r.disconnected(e.Peer)
				}
			}
		}
	}()
	return r, nil
}

// Declared records that the prober declared p gone: its disconnection
// is then a reason to redial it.
func (r *Redialer) Declared(p libp2ppeer.ID) {
	r.mu.Lock()
	r.lost[p] = true
	r.mu.Unlock()
}

// redialPlan is how a disconnected peer is redialed.
type redialPlan struct {
	ai      libp2ppeer.AddrInfo // whom to dial: the bootstrap addresses, or the peerstore's
	pinned  bool                // the application connected to it: redialed whatever the budget
	forGood bool                // pinned or bootstrap: tried every redialSlow after redialFast tries
	deferBy time.Duration       // added to the first wait (redialDeferral)
}

// wanted reports whether p, just disconnected, must be redialed, and
// how. A bootstrap peer is not pinned: the connection manager (ours or
// the other side's) may trim it, and a redial whatever the budget would
// undo every trim.
func (r *Redialer) wanted(p libp2ppeer.ID, lost bool) (plan redialPlan, redial bool) {
	plan = redialPlan{ai: libp2ppeer.AddrInfo{ID: p}, pinned: r.cfg.Pinned(p)}
	if i := slices.IndexFunc(r.cfg.Bootstrap, func(b libp2ppeer.AddrInfo) bool { return b.ID == p }); i >= 0 {
		plan.ai, plan.forGood = r.cfg.Bootstrap[i], true
	}
	plan.forGood = plan.forGood || plan.pinned
	return plan, plan.forGood || lost
}

func (r *Redialer) disconnected(p libp2ppeer.ID) {
	r.mu.Lock()
	lost := r.lost[p]
	delete(r.lost, p)
	plan, redial := r.wanted(p, lost)
	plan.deferBy = redialDeferral(r.cfg.Host.ID(), p, lost)
	if !redial || r.active[p] || r.cfg.Closing() {
		r.mu.Unlock()
		return
	}
	r.active[p] = true
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { r.mu.Lock(); delete(r.active, p); r.mu.Unlock() }()
		r.redial(plan)
	}()
}

// redial dials plan's peer until it is connected, r stops, its tries
// run out, or (unless pinned) the node holds Connections.Low peers.
func (r *Redialer) redial(plan redialPlan) {
	h, p := r.cfg.Host, plan.ai.ID
	for try := 0; ; try++ {
		if try >= redialFast && !plan.forGood {
			return
		}
		wait := redialDelay(try, rand.Float64())
		if try == 0 {
			wait += plan.deferBy
		}
		t := time.NewTimer(wait)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if h.Network().Connectedness(p) == network.Connected {
			return
		}
		if !plan.pinned && r.cfg.BudgetFull() {
			return
		}
		if sw, ok := h.Network().(*swarm.Swarm); ok {
			sw.Backoff().Clear(p)
		}
		ctx, cancel := context.WithTimeout(r.ctx, redialDialTimeout)
		err := r.cfg.Connect(ctx, plan.ai)
		cancel()
		if err == nil {
			return
		}
	}
}

// GoClose closes p's connections on a goroutine Close waits for (a
// close may wait on a stuck connection's writes). Not after Close.
func (r *Redialer) GoClose(p libp2ppeer.ID) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for _, c := range r.cfg.Host.Network().ConnsToPeer(p) {
			_ = c.Close()
		}
	}()
}

// Close stops the redials and waits for them.
func (r *Redialer) Close() {
	r.stop()
	r.wg.Wait()
}
