package routing

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/troupe-mesh/troupe/actor/transport"
)

// Inbound flow control (see docs/trust.md). Every message a peer's
// streams hand to local actors is charged to the peer's budget, an
// transport.Credit, until its actor handled it (or it became a dead letter).
// Once a reader sees the peer at its budget, it stops reading until the
// actors brought the peer down to half of it: the muxer's window then
// fills and the peer's writer waits. One actor alone cannot hold a
// budget (transport.WithRemoteBacklog refuses what it would hold of one peer
// beyond a quarter of the default budget), so a peer's stream pauses only
// when several of its targets fall behind together. The control stream
// pauses only a quarter of the budget later: signals (links, monitors,
// exits, downs) and failed-delivery notices still reach a peer whose
// user stream waits; replies of user types travel on the user stream and
// wait with it. Actors that saved messages may wait for ones behind the
// pause, which would never come: a peer still paused after
// WithPauseGrace has those saved messages shed (transport.Port.ShedSaved),
// and is read again once the actors hold half of its budget. A pause
// that the libp2p scope caused while the peer holds less than half its
// budget never waits, so it never sheds.

// DefaultPeerBudget is the bytes of messages one peer may have delivered
// to actors that have not handled them yet, unless WithPeerBudget says
// otherwise.
const DefaultPeerBudget = 64 << 20

// DefaultPauseGrace is how long a peer may stay paused at its budget
// before its actors' saved messages are shed, unless WithPauseGrace
// says otherwise: well below writeTimeout, after which its writer would
// give the stream up.
const DefaultPauseGrace = 5 * time.Second

// nodeCost is what a message costs in memory besides its body (its node
// in a mailbox, its boxed value): every message is charged that much more.
const nodeCost = 128

// creditPriority is the share of the peer scope's limit the credit may
// reserve (about 40 %): less than stream buffers and large messages being
// received take (budgetPriority), so that near the limit the credit is
// refused first, which pauses the peer, rather than the next frame, which
// resets its stream and declares a loss.
const creditPriority = network.ReservationPriorityLow

// reserveStep is how finely the budget's bytes are reserved in the peer's
// libp2p resource scope: in steps of this many bytes, not per message.
const reserveStep = 1 << 20

// peerBudget is one peer's budget: shared by its inbound streams, kept
// while one of them is read or its actors hold some of it. Its fields
// but credit are guarded by Router.mu.
type peerBudget struct {
	credit   *transport.Credit
	streams  int               // inbound streams being read
	scope    network.PeerScope // where reserved is reserved
	reserved int64
	// reservedNow is reserved, for a look without the lock.
	reservedNow atomic.Int64
	// pause is the peer's reply pause (replypause_driver.go): set once,
	// as the budget is made; it has its own lock. The budget outlives
	// the peer's streams while it is not spent.
	pause *peerPause
}

// budgetFor returns the budget of peer p for a stream being read; the
// reader gives it back with budgetDone.
func (r *Router) budgetFor(p libp2ppeer.ID) *peerBudget {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.budgets[p]
	if b == nil {
		if len(r.budgets) >= r.sweepAt {
			r.sweepBudgetsLocked()
		}
		b = &peerBudget{credit: transport.NewCredit(r.cfg.PeerBudget / 2), pause: r.newPeerPause(p)}
		r.budgets[p] = b
	}
	b.streams++
	return b
}

// sweepBudgetsLocked forgets the budgets of peers whose last stream ended while
// their actors still held some, or their reply pause had something to
// remember, and which they no longer hold or have; it runs
// each time the map doubled, so it costs a constant per new budget.
// r.mu is held.
func (r *Router) sweepBudgetsLocked() {
	now := time.Now()
	for p, b := range r.budgets {
		if b.streams == 0 && b.credit.Held() == 0 && b.pause.spent(now) {
			delete(r.budgets, p)
		}
	}
	r.sweepAt = max(64, 2*len(r.budgets))
}

// budgetDone ends a stream's use of b: the last stream of a peer gives
// back what b reserved in the peer's scope (what the actors still hold
// stays charged to the credit, which the peer's next stream finds, as
// does a reply pause not yet spent: see replyPause.spent).
func (r *Router) budgetDone(p libp2ppeer.ID, b *peerBudget) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b.streams--; b.streams > 0 {
		return
	}
	if b.scope != nil && b.reserved > 0 {
		b.scope.ReleaseMemory(int(b.reserved))
	}
	b.scope, b.reserved = nil, 0
	b.reservedNow.Store(0)
	if b.credit.Held() == 0 && b.pause.spent(time.Now()) {
		delete(r.budgets, p)
	}
}

// settle reserves in scope, the peer's, what b's credit holds (rounded up
// to reserveStep), or gives back what it no longer holds (once that is two
// steps: a credit going up and down around a step would reserve and
// release at every batch). It reports false when the scope refused more:
// the peer is over libp2p's memory limit for it.
func (r *Router) settle(b *peerBudget, scope network.PeerScope) bool {
	want := (b.credit.Held() + reserveStep - 1) / reserveStep * reserveStep
	if now := b.reservedNow.Load(); want <= now && now-want < 2*reserveStep {
		return true // as reserved already: no lock (the common case)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b.scope != nil && b.scope != scope { // a new scope for the peer: move
		if b.reserved > 0 {
			b.scope.ReleaseMemory(int(b.reserved))
		}
		b.reserved = 0
		b.reservedNow.Store(0)
	}
	b.scope = scope
	switch {
	case want > b.reserved:
		if err := scope.ReserveMemory(int(want-b.reserved), creditPriority); err != nil {
			return false
		}
	case want < b.reserved:
		scope.ReleaseMemory(int(b.reserved - want))
	}
	b.reserved = want
	b.reservedNow.Store(want)
	return true
}

// backpressure pauses the reader of in while its peer is at its budget
// (a control stream: a quarter more), or over libp2p's memory limit for
// the peer, until the peer's actors handled half of the budget, shedding
// their saved messages once the pause lasted PauseGrace; it returns the
// router's context's error when the router closes meanwhile. What the
// scope still refuses then (its limit is taken by the peer's stream
// buffers, say) does not stop the reader for longer: the credit is what
// bounds the actors' share.
func (in *inbound) backpressure() error {
	r, b := in.r, in.peer
	if b == nil {
		return nil
	}
	limit := r.cfg.PeerBudget
	if in.ctl {
		limit += r.cfg.PeerBudget / 4
	}
	over := b.credit.Held() >= limit
	if !over && in.scope != nil {
		over = !r.settle(b, in.scope)
	}
	if !over {
		return nil
	}
	r.paused.Add(1)
	r.logPeer(slog.LevelDebug, in.remote, "routing: pausing a peer at its budget", "held", b.credit.Held())
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.PauseGrace)
	err := b.credit.WaitLow(ctx)
	cancel()
	if err != nil && r.ctx.Err() == nil {
		r.shed.Add(1)
		k := r.sys.ShedSaved(b.credit)
		r.logPeer(slog.LevelWarn, in.remote, "routing: a peer stayed paused at its budget: shedding its saved messages",
			"held", b.credit.Held(), "actors", k, "grace", r.cfg.PauseGrace)
		err = b.credit.WaitLow(r.ctx)
	}
	if err != nil {
		return err
	}
	if in.scope != nil {
		r.settle(b, in.scope)
	}
	return nil
}
