package peer

import (
	"context"
	"sync/atomic"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/routing"
)

// Which connections the connection manager may trim. A node protects
// (under busyTag) the connections of a peer that something here depends
// on: trimming one would fire monitors, fail Asks or lose messages in
// flight. The rest are idle, and a trimmed idle connection costs
// nothing: no monitor, link or Ask ties the two peers (the routing's
// PeerDown on the disconnection has nothing to fire), and the next
// message to the peer dials it again. libp2p protects the others itself:
// GossipSub the mesh peers of every joined topic ("pubsub:<topic>"),
// AutoRelay the relays this node holds a reservation on; and a node
// protects, for good, the peers the application connected to (pinTag).
//
// protection decides, as a pure function of what is known of a peer; the
// guard (below) gathers that every guardEvery, and at once when asked,
// and trims (trim.go) right after a sweep that found High peers
// connected.

// busyTag is the tag under which the guard protects busy peers.
const busyTag = "troupe-busy"

// protectReason is why a connection is kept: a set of bits.
type protectReason uint8

const (
	// protEdges: monitors (either way), links or pending Asks tie local
	// actors to the peer's (transport.Port.RemoteEdges).
	protEdges protectReason = 1 << iota
	// protBusy: messages for the peer are queued or in a writer's hand.
	protBusy
	// protHeld: local actors hold messages of the peer's not handled
	// yet (an Ask being served, say).
	protHeld
	// protTraffic: a message went either way within the grace period:
	// a request's reply may be on its way, or a reader may not have
	// read all that was written.
	protTraffic
	// protRelay: this node serves the peer a relay reservation or an
	// active circuit (libp2p's relay service tags those, without
	// protecting them).
	protRelay
	// protExchange: a directory exchange with the peer is open, either
	// way (discovery.SyncProtocol): a newcomer's first pull, which
	// brings it the mesh's directory, is not cut off in the middle.
	protExchange
)

// The tags libp2p's circuit relay service puts on the peers it serves a
// reservation (relay.ReservationTagWeight) or a circuit for.
const (
	relayReservationTag = "relay-reservation"
	relayHopTag         = "relay-v2-hop"
)

// peerFacts is what the guard knows of one connected peer at a sweep.
type peerFacts struct {
	edges    int                  // transport.Port.RemoteEdges
	activity routing.PeerActivity // the router's
	tags     map[string]int       // the connection manager's tags (nil: none)
	exchange bool                 // a directory exchange stream is open
}

// peerMark is what the guard remembers of a peer between sweeps: its
// message counters, and when they last moved.
type peerMark struct {
	sent, received uint64
	active         time.Time
}

// protection returns why the peer described by f must be kept at now,
// given its mark of the last sweep (the zero mark for a peer not seen
// before), and its mark for the next one. A peer is kept for grace after
// a message went to it or came from it.
func protection(prev peerMark, f peerFacts, now time.Time, grace time.Duration) (protectReason, peerMark) {
	next := prev
	a := f.activity
	if a.Sent != prev.sent || a.Received != prev.received {
		next = peerMark{sent: a.Sent, received: a.Received, active: now}
	}
	var r protectReason
	if f.edges > 0 {
		r |= protEdges
	}
	if a.Busy {
		r |= protBusy
	}
	if a.Held > 0 {
		r |= protHeld
	}
	if !next.active.IsZero() && now.Sub(next.active) < grace {
		r |= protTraffic
	}
	if f.tags[relayReservationTag] > 0 || f.tags[relayHopTag] > 0 {
		r |= protRelay
	}
	if f.exchange {
		r |= protExchange
	}
	return r, next
}

// guardEvery is how often the guard sweeps for a grace period: often
// enough that a peer's traffic protects it well within its grace.
func guardEvery(grace time.Duration) time.Duration {
	return min(max(grace/8, 20*time.Millisecond), time.Second)
}

// guard keeps the protection of the node's connected peers up to date.
// Its goroutine owns marks and kept.
type guard struct {
	n     *Node
	cm    *connmgr.BasicConnMgr
	grace time.Duration
	// syncProto is the mesh's directory exchange (discovery.SyncProtocol).
	syncProto protocol.ID
	now       chan guardRequest // a sweep (and trim) asked for
	stop      context.CancelFunc
	done      chan struct{}

	marks map[libp2ppeer.ID]peerMark
	kept  map[libp2ppeer.ID]protectReason // peers protected under busyTag

	// dupsClosed counts the duplicate connections dedupe closed.
	dupsClosed atomic.Int64

	// beforeClose, tests only, runs in trim between the choice of the
	// peers to trim and their last check.
	beforeClose atomic.Pointer[func([]libp2ppeer.ID)]
}

// startGuard starts sweeping n's connections until close.
func startGuard(n *Node) *guard {
	ctx, cancel := context.WithCancel(context.Background())
	g := &guard{n: n, cm: n.cm, grace: n.cfg.conns.Grace, syncProto: discovery.SyncProtocol(n.cfg.mesh), now: make(chan guardRequest),
		stop: cancel, done: make(chan struct{}),
		marks: map[libp2ppeer.ID]peerMark{}, kept: map[libp2ppeer.ID]protectReason{}}
	go g.run(ctx)
	return g
}

func (g *guard) run(ctx context.Context) {
	defer close(g.done)
	tick := time.NewTicker(guardEvery(g.grace))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			g.sweep(time.Now())
			if g.n.cfg.dedupeConns {
				g.dedupe(time.Now())
			}
			// Peers, not connections: two peers that dialed each other
			// at once, or over TCP and QUIC, hold two connections, and a
			// LAN of fewer than High peers must never trim.
			if len(g.n.host.Network().Peers()) >= g.n.cfg.conns.High {
				g.trim(time.Now())
			}
		case r := <-g.now:
			g.sweep(time.Now())
			if g.n.cfg.dedupeConns {
				g.dedupe(time.Now())
			}
			if r.trim {
				g.trim(time.Now())
			}
			close(r.done)
		}
	}
}

// sweep protects the connected peers that protection keeps and
// unprotects the others, and those no longer connected.
func (g *guard) sweep(now time.Time) {
	conns := g.n.host.Network().Peers()
	connected := make(map[libp2ppeer.ID]struct{}, len(conns))
	for _, p := range conns {
		connected[p] = struct{}{}
		g.check(p, now)
	}
	for p := range g.marks {
		if _, ok := connected[p]; !ok {
			delete(g.marks, p) // counters start again at a new connection
			if _, was := g.kept[p]; was {
				g.cm.Unprotect(p, busyTag)
				delete(g.kept, p)
			}
		}
	}
}

// check brings the protection of connected peer p up to date, and
// returns why it is kept (0: it may be trimmed).
func (g *guard) check(p libp2ppeer.ID, now time.Time) protectReason {
	r, mark := protection(g.marks[p], g.facts(p), now, g.grace)
	g.marks[p] = mark
	_, was := g.kept[p]
	switch {
	case r != 0 && !was:
		g.cm.Protect(p, busyTag)
	case r == 0 && was:
		g.cm.Unprotect(p, busyTag)
	}
	if r != 0 {
		g.kept[p] = r
	} else {
		delete(g.kept, p)
	}
	return r
}

// facts gathers what protection needs of peer p.
func (g *guard) facts(p libp2ppeer.ID) peerFacts {
	f := g.workFacts(p)
	f.exchange = g.exchanging(p)
	if ti := g.cm.GetTagInfo(p); ti != nil {
		f.tags = ti.Tags
	}
	return f
}

// workFacts gathers only the facts of the reasons that are work between
// the two peers (livenessReasons): the liveness prober asks for them
// every second for every connected peer, and the connection manager's
// tags (a copy of its map per call) and the stream scan were half of
// that cost at 100 peers. Safe for concurrent use.
func (g *guard) workFacts(p libp2ppeer.ID) peerFacts {
	return peerFacts{edges: g.n.port.RemoteEdges(p.String()), activity: g.n.router.PeerActivity(p)}
}

// exchanging reports whether a directory exchange stream with p is
// open, in either direction.
func (g *guard) exchanging(p libp2ppeer.ID) bool {
	for _, c := range g.n.host.Network().ConnsToPeer(p) {
		for _, s := range c.GetStreams() {
			if s.Protocol() == g.syncProto {
				return true
			}
		}
	}
	return false
}

// guardRequest asks the guard for a sweep now, and a trim after it if
// trim is set, whatever the number of peers; done is closed after.
type guardRequest struct {
	trim bool
	done chan struct{}
}

// sweepNow sweeps at once, and trims after if trim is set, and returns
// when it is done, or ctx ended.
func (g *guard) sweepNow(ctx context.Context, trim bool) error {
	done := make(chan struct{})
	select {
	case g.now <- guardRequest{trim: trim, done: done}:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.done:
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops the guard and waits for it.
func (g *guard) close() {
	g.stop()
	<-g.done
}
