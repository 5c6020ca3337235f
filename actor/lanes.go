package actor

import "github.com/troupe-mesh/troupe/actor/internal/spi"

// Fairness at a shared actor (issue 34 item 3): an actor that gets
// messages from other peers handles them one sender peer at a time, round
// robin, so that one peer's backlog (up to its share,
// transport.WithRemoteBacklog) does not stand in front of every other
// peer's messages. The messages an activation takes from the inbox go to
// one FIFO lane per Credit (a transport's Credit is one sender peer's
// connection; nil: this peer's own actors), and the activation takes one
// message from each lane in turn, polling the inbox before each so that a
// message from a quiet peer gets a lane at once. Each lane keeps its
// messages' order, so what one sender sends to an actor is still handled
// in the order sent; messages of different peers were never ordered.
// A ShedSaved signal goes to its Credit's lane, after the messages it
// sheds. A Down or exit signal this node makes itself for an actor of
// another peer (when it loses the peer, or cannot reach it) goes to the
// lane of that peer's messages, after them, as Erlang's DOWN with
// noconnection comes after what the node had already received; when the
// peer has no lane, to a lane of its own that the peer's next messages
// join, behind it (the loss protocol's Down before the first message
// after a gap).
//
// An actor that only hears from its own peer never has lanes: an inbox
// batch goes to c.fresh as it always did, and the only cost is noticing
// that no message of the batch is charged to a Credit.

// laneSet is an actor's lanes; owned by its activation, in its ext.
type laneSet struct {
	ring []*lane               // the lanes holding messages, in turn order
	turn int                   // index in ring of the next lane to give one
	byCr map[*spi.Credit]*lane // the lanes of ring by Credit
	// byPeer is the lanes of ring by the peer of their messages' senders
	// (the latest lane of a peer that got a new Credit), for the signals
	// this node makes for that peer's actors (lostPeer).
	byPeer map[string]*lane
	last   *lane // the lane add filled last (consecutive nodes mostly share one)
	spare  *lane // an emptied lane, for the next one needed
	// popped is the Credit of the lane pop took from last.
	popped *spi.Credit
	self   string // this peer: its actors' signals go to its lane (nil Credit)
}

type lane struct {
	cr         *spi.Credit
	peer       string // the peer of the senders of a Credit's lane ("" for nil)
	head, tail *node
}

// laneCredit is the Credit that decides n's lane.
func laneCredit(n *node) *spi.Credit {
	if n.size == 0 {
		if n.kind == kindSignal {
			if sh, ok := n.msg.(shedSignal); ok { // after the peer's messages before it
				return sh.credit
			}
		}
		return nil
	}
	return n.charged()
}

// lostPeer returns the peer of the sender of n, a node charged to no
// Credit, when n is a Down or exit signal (that this node made for an
// actor of another peer: PeerDown, undeliverable; the caller tells this
// peer's own actors' signals apart); else "".
func lostPeer(n *node) string {
	if n.kind != kindSignal {
		return ""
	}
	switch n.msg.(type) {
	case downSignal, exitSignal:
		return n.from.Peer()
	}
	return ""
}

// add appends the nodes from h (oldest first, linked by next) to their
// lanes.
func (l *laneSet) add(h *node) {
	for h != nil {
		next := h.next
		h.next = nil
		ln := l.laneFor(h)
		if ln.head == nil {
			ln.head = h
		} else {
			ln.tail.next = h
		}
		ln.tail = h
		h = next
	}
}

// laneFor returns the lane h goes to: a lost peer's signal to that
// peer's lane (a lane of its own when the peer has none, which the
// peer's next messages then join: the signal stays between what came
// before it and what comes after), else its Credit's lane.
func (l *laneSet) laneFor(h *node) *lane {
	cr := laneCredit(h)
	if cr == nil {
		if p := lostPeer(h); p != "" && p != l.self {
			ln := l.byPeer[p]
			if ln == nil {
				ln = l.peerLane(p)
			}
			l.last = ln
			return ln
		}
	}
	if ln := l.last; ln != nil && ln.head != nil && ln.cr == cr && (cr != nil || ln.peer == "") {
		return ln
	}
	ln := l.byCr[cr]
	if ln == nil && cr != nil {
		p := h.from.Peer()
		if pl := l.byPeer[p]; pl != nil && pl.cr == nil { // behind the peer's lost-peer signals
			pl.cr = cr
			l.byCr[cr] = pl
			ln = pl
		} else {
			ln = l.laneOf(cr)
			l.setPeer(ln, p)
		}
	} else if ln == nil {
		ln = l.laneOf(nil)
	}
	l.last = ln
	return ln
}

// peerLane adds an empty lane at the end of the ring for the signals
// this node made for peer p's actors while p has no lane; no Credit yet.
func (l *laneSet) peerLane(p string) *lane {
	ln := l.spare
	if ln != nil {
		l.spare = nil
	} else {
		ln = &lane{}
	}
	if l.byCr == nil {
		l.byCr = make(map[*spi.Credit]*lane)
	}
	l.ring = append(l.ring, ln)
	l.setPeer(ln, p)
	return ln
}

// laneOf returns cr's lane, adding an empty one at the end of the ring.
func (l *laneSet) laneOf(cr *spi.Credit) *lane {
	if ln := l.byCr[cr]; ln != nil {
		return ln
	}
	ln := l.spare
	if ln != nil {
		l.spare = nil
		ln.cr = cr
	} else {
		ln = &lane{cr: cr}
	}
	if l.byCr == nil {
		l.byCr = make(map[*spi.Credit]*lane)
	}
	l.byCr[cr] = ln
	l.ring = append(l.ring, ln)
	return ln
}

// setPeer records p as the peer of ln, a Credit's new lane.
func (l *laneSet) setPeer(ln *lane, p string) {
	if p == "" {
		return
	}
	if l.byPeer == nil {
		l.byPeer = make(map[string]*lane)
	}
	ln.peer = p
	l.byPeer[p] = ln
}

// pop takes the next lane's oldest node (its next nil), or returns nil
// when no lane holds one.
func (l *laneSet) pop() *node {
	if len(l.ring) == 0 {
		return nil
	}
	if l.turn >= len(l.ring) {
		l.turn = 0
	}
	ln := l.ring[l.turn]
	l.popped = ln.cr
	n := ln.head
	ln.head = n.next
	n.next = nil
	if ln.head != nil {
		l.turn++
		return n
	}
	// The lane is empty: it leaves the ring, and the next lane's turn is
	// at the same index.
	ln.tail = nil
	if l.byCr[ln.cr] == ln { // not a lost peer's lane, which has no Credit
		delete(l.byCr, ln.cr)
	}
	if ln.peer != "" && l.byPeer[ln.peer] == ln {
		delete(l.byPeer, ln.peer)
	}
	copy(l.ring[l.turn:], l.ring[l.turn+1:])
	l.ring[len(l.ring)-1] = nil
	l.ring = l.ring[:len(l.ring)-1]
	if l.turn == len(l.ring) { // a lane added before the next pop waits for the others
		l.turn = 0
	}
	if l.last == ln {
		l.last = nil
	}
	ln.cr, ln.peer = nil, ""
	l.spare = ln
	return n
}

// turnChanges reports whether the next pop takes from another lane
// than the last one did.
func (l *laneSet) turnChanges() bool {
	if len(l.ring) == 0 {
		return false
	}
	return l.ring[l.turn%len(l.ring)].cr != l.popped
}

// empty reports whether no lane holds a node.
func (l *laneSet) empty() bool { return len(l.ring) == 0 }

// takeAll empties the lanes and returns their nodes linked by next (in
// lane order, for a terminating actor's dead letters).
func (l *laneSet) takeAll() *node {
	var head, tail *node
	for _, ln := range l.ring {
		if head == nil {
			head = ln.head
		} else {
			tail.next = ln.head
		}
		tail = ln.tail
		ln.head, ln.tail, ln.peer = nil, nil, ""
	}
	clear(l.ring)
	l.ring, l.turn, l.last = l.ring[:0], 0, nil
	clear(l.byCr)
	clear(l.byPeer)
	return head
}

// lanedBatch adds a batch taken from c's inbox (oldest first), at least
// one of whose nodes is charged to a Credit, to c's lanes, and returns
// their next node. (A batch none of whose nodes is charged, while no lane
// holds a node, is handled as it is: c.fresh's fast path.)
func (c *Context) lanedBatch(h *node) *node {
	l := c.lanesOrNew()
	l.add(h)
	return l.pop()
}

// nextLaned returns the next node of c's lanes after polling the inbox, or
// nil when c has no lanes in use (the caller then takes the inbox).
func (c *Context) nextLaned() *node {
	l := c.lanesIfUsed()
	if l == nil {
		return nil
	}
	if c.inbox.nonEmpty() {
		h, _ := c.inbox.takeAllCharged()
		l.add(h)
	}
	if l.turnChanges() {
		// Another peer's turn: what the last one's messages sent (its
		// replies) goes now, not after the activation's other messages.
		c.flushOut()
	}
	return l.pop()
}

// lanesIfUsed returns c's lanes when some hold a node, else nil.
func (c *Context) lanesIfUsed() *laneSet {
	if e := c.ext; e != nil && e.lanes != nil && !e.lanes.empty() {
		return e.lanes
	}
	return nil
}

func (c *Context) lanesOrNew() *laneSet {
	e := c.extra()
	if e.lanes == nil {
		e.lanes = &laneSet{self: c.sys.peer}
	}
	return e.lanes
}
