package routing

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// The reply pause's driver: the readers of a peer's user streams step
// its replyPause at each batch that brought asks, and wait while it is
// paused; its control stream's reader hands it the peer's notices
// (pauseBody). The state lives in the peer's budget (budget.go), which
// all its streams' readers share.

// replyPollEvery is how often a paused reader looks at our link to the
// peer again: the writer's progress has no event of its own to wait for.
const replyPollEvery = 50 * time.Millisecond

// peerPause is a peer's reply pause, shared by its streams' readers.
type peerPause struct {
	mu     sync.Mutex // guards st; a leaf (under Router.mu in budgetDone and the sweep)
	st     replyPause
	paused atomic.Bool   // st.paused, for a look without the lock
	wake   chan struct{} // capacity 1: a notice changed st
}

// newPeerPause returns the pause state of peer p.
func (r *Router) newPeerPause(p libp2ppeer.ID) *peerPause {
	higher := r.h != nil && r.h.ID() > p
	return &peerPause{st: newReplyPause(r.cfg.timings.replyStall, r.cfg.PauseGrace, higher), wake: make(chan struct{}, 1)}
}

// spent is replyPause.spent under the lock; a budget made without a
// pause (tests) has none to remember.
func (pp *peerPause) spent(now time.Time) bool {
	if pp == nil {
		return true
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.st.spent(now)
}

// replyPause steps the reply pause of in's peer after a batch of its
// user stream (asks: the batch held asks), and while it is paused waits,
// stepping it again every replyPollEvery and at each notice, until it is
// not. It returns the router's context's error if the router closes
// meanwhile. Without asks and unpaused it costs one atomic load.
func (in *inbound) replyPause() error {
	if in.ctl || in.peer == nil || in.peer.pause == nil {
		return nil
	}
	pp, asks := in.peer.pause, in.asks
	in.asks = false
	if !asks && !pp.paused.Load() {
		return nil
	}
	r := in.r
	v, _ := r.fast.Load(in.remoteStr)
	l, _ := v.(*link)
	if l == nil || !pp.paused.Load() && (l.user.writing.Load() == 0 || 2*l.user.q.len() < l.user.q.max) {
		return nil // no stall: the common case, no clock read
	}
	var tick *time.Ticker
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		f := pauseFacts{now: time.Now(), queued: l.user.q.len(), bound: l.user.q.max, asks: asks}
		if w := l.user.writing.Load(); w != 0 {
			f.writing = time.Unix(0, w)
		}
		pp.mu.Lock()
		act := pp.st.step(f)
		paused := pp.st.paused
		pp.paused.Store(paused)
		pp.mu.Unlock()
		r.pauseActed(in.remote, act, f)
		if !paused {
			return nil
		}
		if tick == nil {
			tick = time.NewTicker(replyPollEvery)
		}
		select {
		case <-tick.C:
		case <-pp.wake:
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
}

// pauseHeard takes p's notice b (read on its control stream, whose
// reader's budget is pb).
func (r *Router) pauseHeard(p libp2ppeer.ID, pb *peerBudget, b pauseBody) {
	if pb == nil || pb.pause == nil {
		return
	}
	pp := pb.pause
	now := time.Now()
	pp.mu.Lock()
	told := pp.st.told
	act := pp.st.heard(b.On, now)
	believed := b.On && !told && pp.st.told
	pp.paused.Store(pp.st.paused)
	pp.mu.Unlock()
	if believed {
		r.replyPausesHeard.Add(1)
	}
	r.pauseActed(p, act, pauseFacts{now: now})
	select { // a paused reader steps again
	case pp.wake <- struct{}{}:
	default:
	}
}

// pauseActed counts and announces what a step of p's pause did.
func (r *Router) pauseActed(p libp2ppeer.ID, act pauseAct, f pauseFacts) {
	switch act {
	case pauseStart:
		r.replyPaused.Add(1)
		r.logPeer(slog.LevelDebug, p, "routing: pausing a peer that does not read its replies", "queued", f.queued)
		r.pushPause(p, true)
	case pauseEnd:
		r.pushPause(p, false)
	}
}

// pushPause queues the notice that this node paused p's user stream (on)
// or reads it again, on the control queue to p, whatever its bound (as
// the loss messages: a notice is one per pause and end, and a lost end
// costs p at most a grace).
func (r *Router) pushPause(p libp2ppeer.ID, on bool) {
	if r.ctx.Err() != nil {
		return
	}
	for range 3 { // a link retired meanwhile: its successor
		l, err := r.link(p.String())
		if err != nil {
			return // closing
		}
		if l.ctl.q.pushBelow(lossTo, "", pauseBody{On: on}, 0, false, math.MaxInt) {
			return
		}
	}
}
