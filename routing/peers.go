package routing

import (
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// The peers' lifecycle as the router sees it: connections coming and
// going (watchPeers), a peer's links retired once it left and they are
// idle, and hellos that tell a restarted peer from the one before it.

// watchPeers turns disconnections into PeerDown, so that monitors and links
// on the departed peer's actors fire, and records the incarnation a peer
// announces when a connection to it is identified (a new one is a
// restart: see hello). It also retires links when the peer table's
// retries are due.
func (r *Router) watchPeers(sub event.Subscription) {
	defer r.wg.Done()
	defer sub.Close()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		next, ok := r.peers.nextRetire()
		r.mu.Unlock()
		var due <-chan time.Time
		if ok {
			timer.Reset(time.Until(next))
			due = timer.C
		}
		select {
		case <-r.ctx.Done():
			return
		case now := <-due:
			r.mu.Lock()
			acts := r.peers.retiresDue(nil, now)
			r.mu.Unlock()
			r.perform(acts)
		case <-r.retireNews: // a retry was added: the timer is armed anew
		case ev, ok := <-sub.Out():
			if !ok {
				return
			}
			switch e := ev.(type) {
			case event.EvtPeerConnectednessChanged:
				if e.Connectedness == network.NotConnected {
					r.peerGone(e.Peer)
				}
			case event.EvtPeerIdentificationCompleted:
				// One subscription for both: a peer's disconnection
				// and its next identification come in order.
				if inc, ok := parseAgentVersion(e.AgentVersion); ok {
					r.hello(e.Peer, inc, e.Conn)
				}
			}
		}
	}
}

// peerGone: id disconnected. Its actors are down, and its link is
// retired once idle.
func (r *Router) peerGone(id libp2ppeer.ID) {
	var buf [3]peerAction
	r.mu.Lock()
	acts := r.peers.gone(buf[:0], id)
	r.bookLocked(acts)
	r.mu.Unlock()
	r.counts.Delete(id)
	r.perform(acts)
}

// retireLater has the link to id, which just gave up messages as
// unreachable, retired once idle, unless the peer is connected (its
// disconnection will): a link made after its peer left gets no
// disconnection of its own. It does not wait for watchPeers, and none is
// forgotten however many links give up at once: each would keep its
// goroutines and buffers until Close. No lock of the router's may be held.
func (r *Router) retireLater(id libp2ppeer.ID) {
	// r.h is nil in a bare test router (newSender), whose table is
	// zero and which has no watchPeers: the retry is recorded, not run.
	connected := r.h != nil && r.h.Network().Connectedness(id) == network.Connected
	r.mu.Lock()
	r.peers.linkUnreachable(id, connected, time.Now())
	r.mu.Unlock()
	select {
	case r.retireNews <- struct{}{}:
	default: // watchPeers was woken already and will see it
	}
}

// retire drops the link to a peer that disconnected if it is idle, so
// that a long-lived peer keeps no goroutines or buffers for the peers it
// once talked to; the next message to that peer makes a new link. A link
// with messages in hand is left to its writer (it redials, or gives them
// up as unreachable). It reports whether it retired one, and whether it
// left one that was busy.
func (r *Router) retire(peerStr string) (retired, busy bool) {
	r.mu.Lock()
	l := r.links[peerStr]
	if r.closed || l == nil || !l.retire() {
		busy = !r.closed && l != nil
		r.mu.Unlock()
		return false, busy
	}
	delete(r.links, peerStr)
	r.fast.Delete(peerStr)
	r.last.CompareAndSwap(l, nil)
	r.wg.Add(1)
	r.mu.Unlock()
	go func() { // Close waits for its writers to stop
		defer r.wg.Done()
		l.wg.Wait()
	}()
	return true, false
}

// hello records a peer's incarnation (from a stream's hello or from the
// peer's identify announcement) as announced on connection c; a new one
// means the peer restarted, and what watched its old incarnation fires.
// The connections of the old incarnation are closed before hello returns:
// a peer killed without closing them (a crash, a reboot, or a QUIC
// connection, which no kernel resets) would otherwise keep them looking
// alive until their idle timeout, and new streams to the restarted peer
// could open on them and lose what they carry. Nor does hello return
// while another hello (the identify announcement and a stream's hello of
// the same connection come concurrently) is closing them: the message
// that follows a hello could otherwise be answered on a stale connection
// that is about to close. c may be nil (tests).
func (r *Router) hello(id libp2ppeer.ID, inc uint64, c network.Conn) {
	r.hellos.Add(1)
	if c != nil && c.IsClosed() {
		return // late news from a connection that ended, perhaps closed here as stale
	}
	var buf [4]peerAction
	r.mu.Lock()
	if c != nil && c.IsClosed() {
		// Closed since: the peer's disconnection (peerGone) may have
		// cleared its entries already, which must not come back.
		r.mu.Unlock()
		return
	}
	acts := r.peers.hello(buf[:0], id, inc, c)
	r.bookLocked(acts)
	// The table's actions: the closes of stale connections, then those
	// of a restart.
	closes := slices.IndexFunc(acts, func(a peerAction) bool { return a.kind == actPeerDown })
	if closes < 0 {
		closes = len(acts)
	}
	closing := r.closing[id] // another hello's closes, still running
	var done chan struct{}
	if slices.ContainsFunc(acts[:closes], func(a peerAction) bool { return a.kind == actCloseConn }) {
		done = make(chan struct{})
		r.closing[id] = done
	}
	r.mu.Unlock()
	r.perform(acts[:closes])
	if done != nil {
		r.mu.Lock()
		if r.closing[id] == done {
			delete(r.closing, id)
		}
		r.mu.Unlock()
		close(done)
	}
	if closing != nil {
		<-closing
	}
	r.perform(acts[closes:]) // a restart: PeerDown, then EvtPeerRestarted
}

// EvtPeerRestarted is emitted on the host's event bus when a peer turns
// out to be a new incarnation (it restarted with the same identity) while
// it was still connected, or before the old connection's end was noticed:
// the peer left and came back without a libp2p connectedness event in
// between. Monitors of its former actors have fired with
// actor.ErrNodeDown by then. Subscribers must keep reading, as with every
// libp2p event.
type EvtPeerRestarted struct {
	Peer libp2ppeer.ID // the peer that restarted, under the same identity
}
