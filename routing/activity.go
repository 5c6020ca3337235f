package routing

import libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

// PeerActivity is what the router has to do with one peer right now, as
// a connection manager's policy needs it (peer.Node keeps connections
// with traffic from being trimmed): counters that move with every
// message, and whether anything waits or is in hand.
type PeerActivity struct {
	Sent     uint64 // messages written to its streams since it connected
	Received uint64 // messages read from its streams since it connected
	// Busy says that the link to the peer has messages queued or in a
	// writer's hand.
	Busy bool
	Held int64 // bytes of its messages local actors have not handled yet
}

// PeerActivity returns id's activity: the router's lock for its link and
// budget, then a lookup without a lock for the counters. Safe for
// concurrent use. The order matters: a writer counts what it wrote before
// its queue goes idle (writer.took, then outQueue.sleeping), so an
// activity that finds the link idle also finds what was in the writer's
// hand counted in Sent. Read the other way round, a message written
// between the two reads was in neither (Sent read before it moved, the
// queue after it went idle), and the connection guard took a peer just
// sent a message for idle (TestTrimChecksAgainBeforeClosing, under load).
// Received is counted after the messages are handed to their actors
// (inbound.flush), so it may lag behind Held by one batch.
func (r *Router) PeerActivity(id libp2ppeer.ID) PeerActivity {
	var a PeerActivity
	r.mu.Lock()
	l := r.links[id.String()]
	if b := r.budgets[id]; b != nil {
		a.Held = b.credit.Held()
	}
	r.mu.Unlock()
	if l != nil {
		a.Busy = l.user.q.busy() || l.ctl.q.busy()
	}
	if c, ok := r.counts.Load(id); ok {
		pc := c.(*peerCounts)
		a.Sent, a.Received = pc.sent.Load(), pc.received.Load()
	}
	return a
}

// busy reports whether the queue holds messages or its writer has some
// in hand.
func (q *outQueue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n > 0 || !q.idle
}
