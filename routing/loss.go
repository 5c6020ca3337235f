package routing

import (
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Losses. A stream that breaks while its connection lives loses what its
// reader had not read, and no disconnection says so. The node that gives
// it up declares the loss (lossDeclared): PeerDown here, and a lostBody on
// the control stream, where the peer takes this node down at that point;
// a reader that cannot read asks the writer to declare (resetBody). A
// user stream opened after a loss hands nothing on before the lostBody
// was acted on (awaitLoss). docs/routing.md has the protocol as a table,
// its bounds and its limits.

// lossAt reports whether this node must declare the loss when its stream
// s broke with err: not when the peer reset the stream (it declares or
// asks), nor when the connection closed (the disconnection takes the peer
// down on both sides; when another connection to the peer lives, nothing
// does: see Limits).
func lossAt(s network.Stream, err error) bool {
	if s == nil || err == nil || s.Conn().IsClosed() {
		return false
	}
	var se *network.StreamError
	if errors.As(err, &se) {
		return !se.Remote
	}
	return err != nil && !errors.Is(err, network.ErrReset) // a reset without a code is the peer's
}

// isLoss reports whether msg is one of the router's loss messages.
func isLoss(msg any) bool {
	switch msg.(type) {
	case lostBody, resetBody:
		return true
	}
	return false
}

// isOwn reports whether msg is the router's own, nothing to hand back to
// the actor system when it is not sent: a loss message or a pause notice.
func isOwn(msg any) bool {
	if _, ok := msg.(pauseBody); ok {
		return true
	}
	return isLoss(msg)
}

// drawLoss numbers a declaration that messages to l's peer may have been
// lost (see Losses above), with no lock of the router's: a writer does it
// under its own, and puts the lostBody first among its cancellations when
// its control stream broke. The next user stream's hello announces it;
// a request (resetBody) must follow new traffic. lossDeclared acts on
// it.
func (l *link) drawLoss() uint64 {
	s := l.r.lossSeq.Add(1)
	for old := l.lost.Load(); s > old && !l.lost.CompareAndSwap(old, s); old = l.lost.Load() {
	}
	l.traffic.Store(false) // covered
	return s
}

// lossDeclared acts on declaration s of l (drawLoss), for why: the peer's
// actors are down here, and this node's will be there once the lostBody
// arrives, which push queues at the end of the control queue (otherwise
// it is first among the control writer's cancellations). asked says that
// the peer asked for it (resetBody), which is logged at debug level only.
// A declaration drawn before the peer left or restarted (actForget)
// is not remembered, nor its lostBody sent, as if it had come before.
func (r *Router) lossDeclared(l *link, s uint64, why string, asked, push bool) {
	if r.ctx.Err() != nil {
		return
	}
	var buf [2]peerAction
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	acts := r.peers.declared(buf[:0], l.peer, s, s <= l.lossFloor.Load(), push)
	r.mu.Unlock()
	r.lossesDeclared.Add(1)
	level := slog.LevelWarn
	if asked {
		level = slog.LevelDebug
	}
	r.logPeer(level, l.peer, "routing: messages to a peer may have been lost: its actors are down here, and ours there", "why", why)
	r.perform(acts) // the lostBody before the Downs: what they cause comes after it
}

// asked handles p's request to declare a loss (resetBody): honoured when
// this node sent p anything since its last declaration, which covers
// every loss before it; so a peer that asks without end costs one
// declaration per burst of traffic to it.
func (r *Router) asked(p libp2ppeer.ID) {
	l, ok := r.fast.Load(p.String())
	if !ok || !l.(*link).traffic.Swap(false) || r.ctx.Err() != nil {
		return
	}
	s := l.(*link).drawLoss()
	r.lossDeclared(l.(*link), s, "the peer reset a stream of ours that it could not read", true, true)
}

// askLoss asks p to declare a loss (resetBody): this node reset a stream
// of p's that it could not read, its connection alive. After a user
// stream, p's next user stream waits here for the declaration (see
// awaitLoss). One request at a time is queued.
func (r *Router) askLoss(p libp2ppeer.ID, user bool, why string) {
	if r.ctx.Err() != nil {
		return
	}
	var buf [1]peerAction
	r.mu.Lock()
	n := r.lossSeq.Add(1) // under mu: an actForget's floor is above or below it
	acts := r.peers.askLoss(buf[:0], p, user, n)
	r.mu.Unlock()
	if len(acts) == 0 {
		return // gone: its disconnection took it down
	}
	r.logPeer(slog.LevelWarn, p, "routing: a peer's messages were lost: asking it to declare the loss", "why", why)
	r.perform(acts)
}

// pushLoss queues msg (lostBody or resetBody), numbered n (see
// link.lossFloor), on the control queue to p, whatever its bound: it must
// not be dropped as "link full". A resetBody is not queued while another
// waits, and a lostBody renumbers one that is the last message queued
// (see outQueue.pushLost).
func (r *Router) pushLoss(p libp2ppeer.ID, msg any, n uint64) {
	for range 3 { // a link retired meanwhile: its successor
		l, err := r.link(p.String())
		if err != nil {
			return // closing
		}
		_, reset := msg.(resetBody)
		if reset && l.resetQueued.Swap(true) {
			return
		}
		if lost, ok := msg.(lostBody); ok {
			if l.ctl.q.pushLost(lost, n) {
				return
			}
		} else if l.ctl.q.pushBelow(lossTo, "", msg, n, false, math.MaxInt) {
			return
		}
		if reset {
			l.resetQueued.Store(false)
		}
	}
}

// lossTo is the target name of lostBody and resetBody on the wire: they
// are for the router, which ignores it.
const lossTo = "troupe"

// lossHeard acts on p's declaration s (a lostBody read on p's control
// stream, whose hello announced incarnation inc, 0 if none): p is taken
// down here unless a later declaration of p's was taken on already, p is
// gone (its disconnection took it down), or the stream is a former
// incarnation's.
func (r *Router) lossHeard(p libp2ppeer.ID, s, inc uint64) {
	var buf [1]peerAction
	r.mu.Lock()
	acts := r.peers.heard(buf[:0], p, s, inc)
	r.mu.Unlock()
	if len(acts) == 0 {
		return
	}
	r.perform(acts)
	// Acted on only now: a reader that waits for it hands on nothing
	// before the Downs are in their mailboxes.
	r.mu.Lock()
	r.bookLocked(r.peers.actedOn(buf[:0], p, s, acts[0].gen))
	r.mu.Unlock()
}

// lossPresumed takes p down when a declaration awaited did not come within
// lossWait (awaitLoss; see peerTable.presumed).
func (r *Router) lossPresumed(p libp2ppeer.ID, lost uint64) {
	var buf [1]peerAction
	r.mu.Lock()
	acts := r.peers.presumed(buf[:0], p, lost)
	gen := uint64(0)
	if len(acts) > 0 {
		gen = acts[0].gen
	}
	r.mu.Unlock()
	r.perform(acts)
	r.mu.Lock()
	r.bookLocked(r.peers.presumedDone(buf[:0], p, lost, gen))
	r.mu.Unlock()
}

// awaitLoss returns once the declarations a user stream of p must follow
// were acted on: lost, from its hello, and the one asked for after a
// stream of p's was reset here (askLoss). After lossWait (an older peer,
// or a lostBody that was itself lost) it acts on them itself; it gives up
// when the router closes or c, the stream's connection, closed (the
// disconnection took p down).
func (r *Router) awaitLoss(p libp2ppeer.ID, c network.Conn, lost uint64) {
	var timeout <-chan time.Time
	for {
		r.mu.Lock()
		if r.peers.awaited(p, lost) || c != nil && c.IsClosed() {
			r.mu.Unlock()
			return
		}
		ch := r.lossCh
		r.mu.Unlock()
		if timeout == nil {
			if r.hooks.awaitLoss != nil {
				r.hooks.awaitLoss()
			}
			t := time.NewTimer(r.cfg.timings.lossWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ch:
		case <-timeout:
			r.log.Warn("routing: a peer's declared loss did not come: taking it down", "peer", p)
			r.lossPresumed(p, lost)
			return
		case <-r.ctx.Done():
			return
		}
	}
}

// bookLocked does the bookkeeping actions of acts: after actForget, loss
// messages numbered so far to the peer are stale (link.lossFloor); after
// either, the readers in awaitLoss look again. r.mu is held.
func (r *Router) bookLocked(acts []peerAction) {
	for _, a := range acts {
		switch a.kind {
		case actForget:
			if l := r.links[a.peer.String()]; l != nil {
				l.lossFloor.Store(r.lossSeq.Load()) // every number drawn so far
			}
		case actWake:
		default:
			continue
		}
		close(r.lossCh) // wakes the readers in awaitLoss
		r.lossCh = make(chan struct{})
	}
}

// perform does the other actions of acts, in order, with r.mu not held.
func (r *Router) perform(acts []peerAction) {
	for _, a := range acts {
		switch a.kind {
		case actCloseConn:
			r.log.Info("routing: closing a connection of a former incarnation", "peer", a.peer, "conn", a.conn.ID())
			_ = a.conn.Close()
		case actPeerDown:
			switch a.why {
			case downRestarted:
				r.log.Info("routing: peer restarted", "peer", a.peer)
			case downHeard:
				r.lossesHeard.Add(1)
				r.log.Debug("routing: a peer declared that messages it sent may have been lost: its actors are down", "peer", a.peer)
			case downPresumed:
				r.lossesHeard.Add(1)
			}
			r.peersDown.Add(1)
			r.sys.PeerDown(a.peer.String())
		case actRestarted:
			if r.restarted != nil {
				_ = r.restarted.Emit(EvtPeerRestarted{Peer: a.peer})
			}
		case actSendLost:
			r.pushLoss(a.peer, lostBody{Session: a.seq}, a.seq)
		case actAskLoss:
			r.pushLoss(a.peer, resetBody{}, a.seq)
		case actRetire:
			if _, busy := r.retire(a.peer.String()); busy {
				r.mu.Lock()
				r.peers.retireBusy(a.peer, a.next, time.Now())
				r.mu.Unlock()
				// A retry recorded wakes watchPeers to arm its timer for
				// it (as retireLater does). actRetire is performed on
				// watchPeers' own goroutine today (peerGone, a retry
				// due), which re-reads nextRetire anyway: there this
				// costs one more turn of its loop, and the rule holds
				// wherever actRetire comes to be performed.
				select {
				case r.retireNews <- struct{}{}:
				default: // watchPeers was woken already and will see it
				}
			}
		}
	}
}
