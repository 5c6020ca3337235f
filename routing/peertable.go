package routing

import (
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// The peer table: the router's protocol state per peer (incarnations,
// connections, losses, the inbound streams being read, the links to
// retire: peertable_retire.go). Its methods take an event and change the
// table; those that call for actions append them to acts, and those that
// never do (linkUnreachable, retireBusy) take no acts. It does no IO,
// starts no goroutine, takes no lock and calls neither the actor system
// nor libp2p, but for the connection predicate it is given (closed) and
// the reader fields that streamHello sets. Its maps are made as they are
// first written, so that a zero table (a bare test router's) takes
// events too, but for a hello with a connection, which needs closed.
// The Router, its driver, holds it under Router.mu and performs
// the actions (peers.go, loss.go): the bookkeeping ones before it
// unlocks, the others after. docs/routing.md has the loss protocol as a
// table; peertable_test.go follows its rows.

// peerTable is the router's state per peer. Not safe for concurrent use.
type peerTable struct {
	// closed reports whether a connection closed: libp2p's IsClosed, or
	// a test's.
	closed func(network.Conn) bool
	peers  map[libp2ppeer.ID]*peerState
	gen    uint64 // counts forgets: a peerState's losses belong to one
	// streams are the inbound streams being read per peer and protocol,
	// oldest first (handles: the table never touches their streams).
	streams map[inboundKey][]*reader
	// retries are the links to try to retire again, per peer; delays
	// the waits before each (timings.retireDelays, set by the driver).
	retries map[libp2ppeer.ID]retry
	delays  [3]time.Duration
}

// peerState is what the router knows of one peer.
type peerState struct {
	known bool   // an incarnation was heard: a hello, or identify
	inc   uint64 // the last incarnation heard
	// conns holds the incarnation each open connection's peer announced
	// on it, to close those of an incarnation that ended.
	conns map[network.Conn]uint64
	// Losses (see loss.go): this node's last declaration toward the
	// peer; the last of the peer's declarations taken on here, and acted
	// on (its PeerDown done); and the one a user stream of its must wait
	// for after a reset here.
	lost, heard, acted, want uint64
	gen                      uint64 // the table's gen when its losses were last forgotten (or it was made)
}

func newPeerTable(closed func(network.Conn) bool) peerTable {
	return peerTable{closed: closed, peers: make(map[libp2ppeer.ID]*peerState), streams: make(map[inboundKey][]*reader),
		retries: make(map[libp2ppeer.ID]retry)}
}

// actionKind says what a peerAction asks of the driver.
type actionKind uint8

const (
	// actForget: the table forgot p's losses (it left or restarted): loss
	// messages to p numbered so far are stale (link.lossFloor), and the
	// readers waiting for p's declarations look again. Bookkeeping: the
	// driver does it before it unlocks, as with actWake.
	actForget actionKind = iota + 1
	// actWake: a declaration of p's was acted on; the readers waiting
	// look again.
	actWake
	// actCloseConn: close conn, a connection of p's former incarnation.
	actCloseConn
	// actPeerDown: p's actors are down (Port.PeerDown), for why.
	actPeerDown
	// actRestarted: p restarted while connected (EvtPeerRestarted).
	actRestarted
	// actSendLost: queue the lostBody of this node's declaration seq.
	actSendLost
	// actAskLoss: queue a resetBody numbered seq: p is to declare.
	actAskLoss
	// actResetStream: reset the stream read by rd, which a newer one of
	// its writer supersedes, and wait for its reader to return.
	actResetStream
	// actRetire: retire p's link if it is idle (Router.retire); report
	// one still busy with retireBusy(p, next).
	actRetire
)

// downReason says why a peer is taken down (actPeerDown).
type downReason uint8

const (
	downGone      downReason = iota + 1 // it disconnected
	downRestarted                       // a new incarnation
	downDeclared                        // this node declared a loss toward it
	downHeard                           // it declared a loss toward this node
	downPresumed                        // its declaration was awaited in vain
)

// peerAction is one thing the table asks its driver to do about peer.
type peerAction struct {
	kind actionKind
	peer libp2ppeer.ID
	why  downReason   // actPeerDown
	seq  uint64       // actSendLost, actAskLoss
	gen  uint64       // actPeerDown of heard and presumed: pass back to actedOn, presumedDone
	conn network.Conn // actCloseConn
	rd   *reader      // actResetStream
	next int          // actRetire: the index in the delays of the wait before the next try
}

// state returns p's entry, made if it has none.
func (t *peerTable) state(p libp2ppeer.ID) *peerState {
	st := t.peers[p]
	if st == nil {
		st = &peerState{gen: t.gen}
		if t.peers == nil {
			t.peers = make(map[libp2ppeer.ID]*peerState)
		}
		t.peers[p] = st
	}
	return st
}

// forget drops what the table knows of p's losses.
func (t *peerTable) forget(acts []peerAction, p libp2ppeer.ID) []peerAction {
	t.gen++
	if st := t.peers[p]; st != nil {
		st.lost, st.heard, st.acted, st.want = 0, 0, 0, 0
		st.gen = t.gen
	}
	return append(acts, peerAction{kind: actForget, peer: p})
}

// gone: p disconnected. What is known of its incarnation, connections
// and losses goes, it is down, and its link is retired if idle. A retry
// of its link pending (t.retries[p]) is kept, deliberately: the try that
// gone asks for may find the link still busy, and then leaves that retry
// as it is (retireBusy).
func (t *peerTable) gone(acts []peerAction, p libp2ppeer.ID) []peerAction {
	acts = t.forget(acts, p)
	delete(t.peers, p)
	return append(acts, peerAction{kind: actPeerDown, peer: p, why: downGone}, peerAction{kind: actRetire, peer: p})
}

// hello: p announced incarnation inc on connection c (nil: none known),
// in a stream's hello or identify. The connections of another
// incarnation are closed; a new incarnation of a known peer is a
// restart: its losses are forgotten, it is down, and restarted.
func (t *peerTable) hello(acts []peerAction, p libp2ppeer.ID, inc uint64, c network.Conn) []peerAction {
	st := t.state(p)
	restarted := st.known && st.inc != inc
	st.known, st.inc = true, inc
	if restarted {
		acts = t.forget(acts, p) // a new incarnation numbers its declarations anew
	}
	if c != nil {
		if st.conns == nil {
			st.conns = make(map[network.Conn]uint64, 1)
		}
		st.conns[c] = inc
		for o, oinc := range st.conns {
			switch {
			case t.closed(o):
				delete(st.conns, o)
			case oinc != inc:
				delete(st.conns, o)
				acts = append(acts, peerAction{kind: actCloseConn, peer: p, conn: o})
			}
		}
	}
	if restarted {
		acts = append(acts, peerAction{kind: actPeerDown, peer: p, why: downRestarted},
			peerAction{kind: actRestarted, peer: p})
	}
	return acts
}

// known reports whether an incarnation of p was heard since it last
// disconnected.
func (t *peerTable) known(p libp2ppeer.ID) bool {
	st := t.peers[p]
	return st != nil && st.known
}

// lost returns this node's last declaration toward p (0: none since p
// last left or restarted).
func (t *peerTable) lost(p libp2ppeer.ID) uint64 {
	if st := t.peers[p]; st != nil {
		return st.lost
	}
	return 0
}

// declared: this node declared loss s toward p; stale says that s was
// numbered before p last left or restarted (link.lossFloor), as if it
// came before: it is not remembered, and its lostBody not sent. push
// says that the lostBody is still to be queued (a control writer whose
// stream broke has it first in hand already). p is down either way.
func (t *peerTable) declared(acts []peerAction, p libp2ppeer.ID, s uint64, stale, push bool) []peerAction {
	if !stale {
		if st := t.state(p); s > st.lost {
			st.lost = s
		}
		if push {
			acts = append(acts, peerAction{kind: actSendLost, peer: p, seq: s})
		}
	}
	return append(acts, peerAction{kind: actPeerDown, peer: p, why: downDeclared})
}

// askLoss: a stream of p's was reset here, numbered n (a user stream's,
// if user): p is asked to declare, and its next user stream waits for
// that. Nothing is asked of a peer not known (its disconnection took it
// down).
func (t *peerTable) askLoss(acts []peerAction, p libp2ppeer.ID, user bool, n uint64) []peerAction {
	st := t.peers[p]
	if st == nil || !st.known {
		return acts
	}
	if user {
		st.want = max(st.want, st.heard+1)
	}
	return append(acts, peerAction{kind: actAskLoss, peer: p, seq: n})
}

// heard: p's declaration s arrived (a lostBody) on a control stream whose
// hello announced incarnation inc (0: none). p is down, unless a later
// declaration of its was taken on already, p is not known, or inc is not
// p's incarnation now (the stream is a former incarnation's: its numbers
// are not the new one's); the driver reports with actedOn once the Downs
// are done.
func (t *peerTable) heard(acts []peerAction, p libp2ppeer.ID, s, inc uint64) []peerAction {
	st := t.peers[p]
	if st == nil || !st.known || s <= st.heard || inc != 0 && inc != st.inc {
		return acts // inc: a former incarnation's, read after the new one's hello
	}
	st.heard = s // taken on: another with s does nothing
	return append(acts, peerAction{kind: actPeerDown, peer: p, why: downHeard, gen: st.gen})
}

// actedOn: the Downs of p's declaration s are done: the readers waiting
// for it may hand on.
func (t *peerTable) actedOn(acts []peerAction, p libp2ppeer.ID, s, gen uint64) []peerAction {
	st := t.peers[p]
	if st == nil || st.gen != gen || s <= st.acted {
		return acts
	}
	st.acted = s
	if st.want <= s {
		st.want = 0
	}
	return append(acts, peerAction{kind: actWake, peer: p})
}

// presumed: a declaration awaited from p did not come in time. The one
// its hello announced, lost, is a number of p's and counts as heard; the
// one asked for (want) is dropped, never recorded as a number of p's:
// p's next declaration, whatever its number, is still acted on. p is
// down if known; the driver reports with presumedDone once it is.
func (t *peerTable) presumed(acts []peerAction, p libp2ppeer.ID, lost uint64) []peerAction {
	st := t.peers[p]
	if st == nil || !st.known {
		if st != nil {
			st.want = 0
		}
		return acts
	}
	st.want = 0
	st.heard = max(st.heard, lost)
	return append(acts, peerAction{kind: actPeerDown, peer: p, why: downPresumed, gen: st.gen})
}

// presumedDone: the Downs of a presumed declaration are done (see
// presumed): the readers waiting for p look again.
func (t *peerTable) presumedDone(acts []peerAction, p libp2ppeer.ID, lost, gen uint64) []peerAction {
	if st := t.peers[p]; st != nil && st.known && st.gen == gen && lost > st.acted {
		st.acted = lost
	}
	return append(acts, peerAction{kind: actWake, peer: p})
}

// awaited reports whether a user stream of p whose hello announced
// declaration lost may hand on: that and the one asked for were acted on.
func (t *peerTable) awaited(p libp2ppeer.ID, lost uint64) bool {
	st := t.peers[p]
	if st == nil {
		return lost == 0
	}
	return st.acted >= max(lost, st.want)
}

// streamOpened: an inbound stream of key's peer and protocol, read by rd,
// opened. It reports false, and does not take it, when max are read
// already.
func (t *peerTable) streamOpened(key inboundKey, rd *reader, max int) bool {
	if len(t.streams[key]) >= max {
		return false
	}
	if t.streams == nil {
		t.streams = make(map[inboundKey][]*reader)
	}
	t.streams[key] = append(t.streams[key], rd)
	return true
}

// streamEnded: rd's reader returned.
func (t *peerTable) streamEnded(key inboundKey, rd *reader) {
	rs := slices.DeleteFunc(t.streams[key], func(o *reader) bool { return o == rd })
	if len(rs) == 0 {
		delete(t.streams, key)
	} else {
		t.streams[key] = rs
	}
}

// streamHello: the stream rd reads said hello h (see inbound.supersede).
// The streams its writer opened before are reset (actResetStream); it
// reports false when one the writer opened later is read already: rd's
// is stale. Which are older the writer's numbers say (Seq, in one
// incarnation); without one, the order in which they arrived.
func (t *peerTable) streamHello(acts []peerAction, key inboundKey, rd *reader, h helloBody) ([]peerAction, bool) {
	rd.helloed, rd.inc, rd.seq = true, h.Incarnation, h.Stream
	n := len(acts)
	arrived := true // o arrived before rd's stream
	for _, o := range t.streams[key] {
		switch {
		case o == rd:
			arrived = false
		case h.Stream != 0 && o.helloed && o.seq != 0 && o.inc == h.Incarnation:
			if o.seq > h.Stream {
				return acts[:n], false
			}
			acts = append(acts, peerAction{kind: actResetStream, peer: key.peer, rd: o})
		case h.Stream != 0 && !o.helloed:
			// Its hello will tell which came first.
		case arrived:
			acts = append(acts, peerAction{kind: actResetStream, peer: key.peer, rd: o})
		}
	}
	return acts, true
}
