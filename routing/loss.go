package routing

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Losses. A stream that breaks while its connection lives loses in
// silence whatever its reader had not read: the transport drops it. No
// disconnection tells either side; Erlang's rule (a message may be lost
// only with the connection, and then every monitor fires) is kept in
// band instead.
//
// The node that gives a stream up declares the loss (declareLoss): a
// writer whose own write failed (its deadline passed: the peer stopped
// reading), or a reader that reset a stream it could not read (bad
// bytes, a stall, a memory limit), which asks the writer to declare it
// (resetBody). Declaring takes the peer down here (System.PeerDown: every
// monitor, link and Ask across fires with ErrNodeDown) and queues a
// lostBody on the control stream, where the peer takes this node down in
// turn at that point of the stream: the monitor and link requests sent
// before it are ended with the others, those sent after it (an actor that
// monitors again after its Down) are kept, on both sides alike.
//
// User messages travel on another stream. A user stream opened after a
// loss says so in its hello (helloBody.Lost), and its reader hands on
// nothing before the control stream's lostBody was acted on
// (awaitLoss): an actor sees no message sent after a lost one before the
// Down that reports the loss.
//
// Limits: a monitor or link request that crosses a lostBody in the other
// direction within one round trip may be left on one side only. Messages
// the broken stream's reader had decoded before the break may reach their
// actors after the Down (never after a message of the next stream). Older
// peers ignore lostBody and resetBody (a reader that waits for one gives
// up after lossWait and takes the peer down itself). A loss on a stream
// whose connection closed is left to the disconnection.

// lossWait bounds the wait of a user stream's reader for the lostBody
// that its hello, or a reset of the peer's last stream here, announces
// (a variable for tests).
var lossWait = 5 * time.Second

// testHookAwaitLoss, set by tests only, runs when a reader starts to wait
// in awaitLoss.
var testHookAwaitLoss func(*Router)

// declarable reports whether this node must declare the loss when its
// stream s broke with err: not when the connection is gone (a
// disconnection takes the peer down on both sides) nor when the peer
// reset the stream (it declares or asks).
func declarable(s network.Stream, err error) bool {
	if s == nil || s.Conn().IsClosed() {
		return false
	}
	var se *network.StreamError
	if errors.As(err, &se) {
		return !se.Remote
	}
	return !errors.Is(err, network.ErrReset) // a reset without a code is the peer's
}

// declareLoss declares that messages to p may have been lost (see
// Losses above): p's actors are down here, and this node's will be there.
// asked says that p asked for it (resetBody), which is logged at debug
// level only: a peer could ask without end.
func (r *Router) declareLoss(p libp2ppeer.ID, why string, asked bool) {
	if r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	s := r.lossSeq.Add(1)
	r.lost[p] = s
	r.mu.Unlock()
	r.lossesDeclared.Add(1)
	level := slog.LevelWarn
	if asked {
		level = slog.LevelDebug
	}
	r.log.Log(context.Background(), level, "routing: messages to a peer may have been lost: its actors are down here, and ours there", "peer", p, "why", why)
	r.pushLoss(p, lostBody{Session: s}) // before the Downs: what they cause comes after it
	r.peersDown.Add(1)
	r.sys.PeerDown(p.String())
}

// askLoss asks p to declare a loss (resetBody): this node reset a stream
// of p's that it could not read, its connection alive. After a user
// stream, p's next user stream waits here for the declaration (see
// awaitLoss).
func (r *Router) askLoss(p libp2ppeer.ID, user bool, why string) {
	if r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	if user {
		r.want[p] = max(r.want[p], r.heard[p]+1)
	}
	r.mu.Unlock()
	r.log.Warn("routing: a peer's messages were lost: asking it to declare the loss", "peer", p, "why", why)
	r.pushLoss(p, resetBody{})
}

// pushLoss queues msg (lostBody or resetBody) on the control queue to p,
// whatever its bound: it must not be dropped as "link full".
func (r *Router) pushLoss(p libp2ppeer.ID, msg any) {
	for range 3 { // a link retired meanwhile: its successor
		l, err := r.link(p.String())
		if err != nil {
			return // closing
		}
		if l.ctl.q.pushBelow(lossTo, "", msg, 0, false, math.MaxInt) {
			return
		}
	}
}

// lossTo is the target name of lostBody and resetBody on the wire: they
// are for the router, which ignores it.
const lossTo = "troupe"

// lossHeard acts on p's declaration s (a lostBody read on p's control
// stream, or one awaited in vain): p is taken down here unless a later
// declaration of p's was acted on already.
func (r *Router) lossHeard(p libp2ppeer.ID, s uint64) {
	r.mu.Lock()
	done := s <= r.heard[p]
	r.mu.Unlock()
	if done {
		return
	}
	r.lossesHeard.Add(1)
	r.log.Debug("routing: a peer declared that messages it sent may have been lost: its actors are down", "peer", p)
	r.peersDown.Add(1)
	r.sys.PeerDown(p.String())
	// Acted on only now: a reader that waits for it hands on nothing
	// before the Downs are in their mailboxes.
	r.mu.Lock()
	if s > r.heard[p] {
		r.heard[p] = s
		if r.want[p] <= s {
			delete(r.want, p)
		}
		close(r.lossCh) // wakes the readers in awaitLoss
		r.lossCh = make(chan struct{})
	}
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
		target := max(lost, r.want[p])
		if r.heard[p] >= target || c != nil && c.IsClosed() {
			r.mu.Unlock()
			return
		}
		ch := r.lossCh
		r.mu.Unlock()
		if timeout == nil {
			if testHookAwaitLoss != nil {
				testHookAwaitLoss(r)
			}
			t := time.NewTimer(lossWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ch:
		case <-timeout:
			r.log.Warn("routing: a peer's declared loss did not come: taking it down", "peer", p)
			r.lossHeard(p, target)
			return
		case <-r.ctx.Done():
			return
		}
	}
}

// forgetLosses drops what the router remembers of losses with p, which
// disconnected or restarted: its declarations start anew. r.mu is held.
func (r *Router) forgetLosses(p libp2ppeer.ID) {
	delete(r.lost, p)
	delete(r.heard, p)
	delete(r.want, p)
	close(r.lossCh) // a reader waiting for p sees its connection closed
	r.lossCh = make(chan struct{})
}
