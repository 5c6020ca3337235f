package routing

import (
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Retiring links, in the peer table. A peer's link is tried once its
// peer left (gone), and after the first delay once it gave messages up as
// unreachable while its peer was not connected (linkUnreachable): a link
// made after its peer left gets no disconnection of its own. A link still
// busy (its writers giving up what they held, which takes three dials) is
// tried again after each of the delays (timings.retireDelays), then no
// more. The driver tries (actRetire: Router.retire), reports a busy link
// (retireBusy), wakes its timer's goroutine after recording a retry
// (linkUnreachable, retireBusy: they return no actions) and wakes at
// nextRetire for retiresDue.

// retry is a pending try of a peer's link: when, and the index in the
// delays of the wait that led to it.
type retry struct {
	at      time.Time
	attempt int
}

// linkUnreachable: p's link gave messages up as unreachable at now, p
// connected or not. A retry pending already stays as it is.
func (t *peerTable) linkUnreachable(p libp2ppeer.ID, connected bool, now time.Time) {
	if !connected {
		t.retryAt(p, 0, now, false)
	}
}

// retireBusy: p's link was busy when actRetire a tried it at now; next is
// a.next. It is tried again after delays[next], if there is one. A retry
// of the first try (as p left) leaves one pending already as it is.
func (t *peerTable) retireBusy(p libp2ppeer.ID, next int, now time.Time) {
	if next < len(t.delays) {
		t.retryAt(p, next, now, next > 0)
	}
}

// retryAt sets p's retry after delays[attempt] from now, unless one is
// pending and replace is false.
func (t *peerTable) retryAt(p libp2ppeer.ID, attempt int, now time.Time, replace bool) {
	if _, ok := t.retries[p]; ok && !replace {
		return
	}
	if t.retries == nil {
		t.retries = make(map[libp2ppeer.ID]retry)
	}
	t.retries[p] = retry{at: now.Add(t.delays[attempt]), attempt: attempt}
}

// retiresDue appends an actRetire for each retry due at now, which it
// drops: a busy link is reported back (retireBusy).
func (t *peerTable) retiresDue(acts []peerAction, now time.Time) []peerAction {
	for p, r := range t.retries {
		if !r.at.After(now) {
			delete(t.retries, p)
			acts = append(acts, peerAction{kind: actRetire, peer: p, next: r.attempt + 1})
		}
	}
	return acts
}

// nextRetire returns when the next retry is due; false if none is
// pending.
func (t *peerTable) nextRetire() (time.Time, bool) {
	var next time.Time
	for _, r := range t.retries {
		if next.IsZero() || r.at.Before(next) {
			next = r.at
		}
	}
	return next, !next.IsZero()
}
