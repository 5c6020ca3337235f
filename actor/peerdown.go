package actor

import (
	"sync"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// edgeKind says what a remoteEdge is.
type edgeKind uint8

const (
	edgeMonitor edgeKind = iota // the local actor monitors the remote one
	edgeLink                    // the two are linked
	edgeWatcher                 // the remote actor monitors the local one
	edgeAsk                     // the local actor (or System.Ask) waits for the remote one's reply
)

// remoteEdge is a monitor, link or pending Ask between a local actor and an
// actor on another peer: what must fire, or be forgotten, when that peer
// goes away.
type remoteEdge struct {
	kind   edgeKind
	local  Ref
	remote Ref
	id     MonitorID // the monitor's ID; for edgeAsk, the Ask's correlation ID
}

// remoteIndex records the edges per remote peer. It is touched when actors
// monitor or link across peers and twice per remote Ask, never per message.
type remoteIndex struct {
	mu    sync.Mutex // guards the fields below
	peers map[string]map[remoteEdge]struct{}
	// watches counts the watcher and link edges of each peer: what
	// transport.WithRemoteWatchLimit caps; total is their sum, which
	// transport.WithRemoteWatchTotal caps.
	watches map[string]int
	total   int
	// spare is the last peer's map that emptied, kept for the next peer
	// that needs one: a remote Ask adds and removes an edge per request,
	// and a map made anew each time would cost some 800 bytes.
	spare map[remoteEdge]struct{}
}

// isWatch reports whether an edge counts against the watch limit: the
// remote actor monitors the local one, or the two are linked.
func (e remoteEdge) isWatch() bool { return e.kind == edgeWatcher || e.kind == edgeLink }

func (x *remoteIndex) add(e remoteEdge) { x.addWithin(e, 0, 0) }

// addWithin adds e unless it is a watch that would make its peer's more
// than limit, or the node's more than total while its peer holds
// spi.RemoteWatchFloor or more (0: no limit); it reports whether e is in the
// index.
func (x *remoteIndex) addWithin(e remoteEdge, limit, total int) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.peers == nil {
		x.peers = make(map[string]map[remoteEdge]struct{})
		x.watches = make(map[string]int)
	}
	peer := e.remote.Peer()
	m := x.peers[peer]
	if e.isWatch() {
		if _, ok := m[e]; ok {
			return true
		}
		if limit > 0 && x.watches[peer] >= limit {
			return false
		}
		if total > 0 && x.total >= total && x.watches[peer] >= spi.RemoteWatchFloor {
			return false
		}
		x.watches[peer]++
		x.total++
	}
	if m == nil {
		m, x.spare = x.spare, nil
		if m == nil {
			m = make(map[remoteEdge]struct{})
		}
		x.peers[peer] = m
	}
	m[e] = struct{}{}
	return true
}

func (x *remoteIndex) remove(e remoteEdge) {
	x.mu.Lock()
	defer x.mu.Unlock()
	peer := e.remote.Peer()
	if m := x.peers[peer]; m != nil {
		if e.isWatch() {
			if _, ok := m[e]; !ok {
				return
			}
			x.total--
			if x.watches[peer]--; x.watches[peer] == 0 {
				delete(x.watches, peer)
			}
		}
		delete(m, e)
		if len(m) == 0 {
			delete(x.peers, peer)
			x.spare = m
		}
	}
}

func (x *remoteIndex) take(peer string) map[remoteEdge]struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.peers[peer]
	delete(x.peers, peer)
	x.total -= x.watches[peer]
	delete(x.watches, peer)
	return m
}

// watchTotal returns the watches of all other peers.
func (x *remoteIndex) watchTotal() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.total
}

// remoteWatches is transport.Port.RemoteWatches: the monitors and links
// that actors of other peers hold on this system's actors, and its
// actors' links to them. Safe for concurrent use.
func (s *System) remoteWatches() int { return s.remote.watchTotal() }

// PeerDown tells the system that a peer went away (disconnected, or came
// back as a new incarnation): every local monitor of an actor on it receives
// Down with ErrNodeDown, every local actor linked to one receives an exit
// signal with ErrNodeDown, every Ask waiting for a reply from one of its
// actors fails with ErrNodeDown (as an Erlang call fails on nodedown, at
// once rather than at its timeout), and the monitors its actors held on
// local actors are dropped (as Erlang drops them when a node goes down), so
// that they neither pile up nor send Downs to a peer that is gone. Routing
// calls it. Safe for concurrent use.
func (p *port) PeerDown(peer string) {
	s := p.s
	for e := range s.remote.take(peer) {
		var sig spi.Signal
		switch e.kind {
		case edgeAsk:
			s.deliverLocal(e.local, s.newNode(undeliverableReply{To: e.remote, Reason: ErrNodeDown}, e.remote, uint64(e.id), kindReply))
			continue
		case edgeLink:
			sig = exitSignal{Reason: ErrNodeDown, Linked: true}
		case edgeMonitor:
			sig = downSignal{ID: e.id, Reason: ErrNodeDown}
		case edgeWatcher:
			sig = demonitorSignal{ID: e.id}
		}
		s.deliverLocal(e.local, s.newNode(sig, e.remote, 0, kindSignal))
	}
}

// trackRemote records an edge when other is on another peer.
func (c *Context) trackRemote(kind edgeKind, other Ref, id MonitorID, add bool) {
	if other.on(c.sys.peer) || other.IsZero() {
		return
	}
	e := remoteEdge{kind: kind, local: c.Self(), remote: other, id: id}
	if add {
		c.sys.remote.add(e)
	} else {
		c.sys.remote.remove(e)
	}
}

// admitRemote records the watch edge that other asked for when other is
// on another peer, and reports false when its peer's watches are at the
// limit (the edge is then not made).
func (c *Context) admitRemote(kind edgeKind, other Ref, id MonitorID) bool {
	if other.on(c.sys.peer) || other.IsZero() {
		return true
	}
	return c.sys.remote.addWithin(remoteEdge{kind: kind, local: c.Self(), remote: other, id: id}, c.sys.cfg.watchLimit, c.sys.cfg.watchTotal)
}
