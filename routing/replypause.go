package routing

import "time"

// The reply pause (issue 34; docs/trust.md): a peer that asks and does
// not read the replies has its user stream left unread here while our
// user link to it accepts no bytes, rather than its replies filling our
// link queue and the rest becoming dead letters. Pure: the reader of the
// peer's user stream (replypause_driver.go) gives it the facts and acts
// on what it returns; the peer's notices (pauseBody, on the control
// stream) come in through heard.
//
// Three rules keep two honest peers flooding each other from pausing
// each other for good: a pause is announced on the control stream, which
// is never paused; a node told that a peer paused it does not pause that
// peer, and of two that paused each other at once the one whose peer ID
// sorts higher resumes at the other's notice; and a pause ends after a
// grace whatever happens. A peer's notices are believed within a budget
// (toldDecay), so that a peer that claims to pause us all the time to
// escape its own pause escapes it a quarter of the time at most.

// defaultStallAfter is how long our user link to a peer must accept no
// bytes, its queue half full, before a peer asking through it is paused.
const defaultStallAfter = time.Second

// toldDecay is how fast the time a peer told us it paused us is
// forgiven: a quarter of the time that passes. A notice is believed
// while what is left of that time is under stallAfter: a peer that
// claims a pause all the time is believed for grace+stallAfter (6 s)
// in every 26 s or so.
const toldDecay = 4

// pauseAct is what the reader does after a step.
type pauseAct uint8

const (
	pauseKeep  pauseAct = iota // nothing changes
	pauseStart                 // stop reading the peer's user stream; announce the pause
	pauseEnd                   // read it again; announce the end
)

// pauseFacts are what a step looks at.
type pauseFacts struct {
	now time.Time
	// writing is when the write our user link's writer waits in began
	// (its last progress: the bytes before were taken); zero when it
	// waits in none.
	writing time.Time
	// queued and bound are our user link queue's fill and bound.
	queued, bound int
	// asks says that the peer's user stream brought asks since the last
	// step.
	asks bool
}

// replyPause is the reply pause of one peer.
type replyPause struct {
	stallAfter, grace time.Duration
	higher            bool // our peer ID sorts above the peer's

	paused bool
	since  time.Time // when the pause began
	armed  time.Time // a stall counts from here on: the last pause's end

	told      bool          // the peer told us it paused us
	toldSince time.Time     // when it did
	toldDebt  time.Duration // the told time not forgiven yet, as of debtAt
	debtAt    time.Time
}

// newReplyPause returns the pause state of a peer: higher says that our
// peer ID sorts above the peer's.
func newReplyPause(stallAfter, grace time.Duration, higher bool) replyPause {
	return replyPause{stallAfter: stallAfter, grace: grace, higher: higher}
}

// stalled reports whether f shows our link to the peer stalled: a write
// waiting for stallAfter (counted from the last pause's end at the
// earliest) with the queue at least half full.
func (p *replyPause) stalled(f pauseFacts) bool {
	if f.writing.IsZero() || 2*f.queued < f.bound {
		return false
	}
	from := f.writing
	if p.armed.After(from) {
		from = p.armed
	}
	return f.now.Sub(from) >= p.stallAfter
}

// step takes the facts of now and says what to do.
func (p *replyPause) step(f pauseFacts) pauseAct {
	p.lapse(f.now)
	if p.paused {
		if !f.now.Before(p.since.Add(p.grace)) || // the grace is over
			f.writing.IsZero() || f.writing.After(p.since) || // the link took bytes
			p.told && p.higher { // both paused: the higher resumes
			return p.end(f.now)
		}
		return pauseKeep
	}
	if f.asks && !p.told && p.stalled(f) {
		p.paused, p.since = true, f.now
		return pauseStart
	}
	return pauseKeep
}

// end ends the pause at now.
func (p *replyPause) end(now time.Time) pauseAct {
	p.paused, p.armed = false, now
	return pauseEnd
}

// heard takes the peer's notice, at now, that it paused us (on) or ended
// that pause, and says what to do.
func (p *replyPause) heard(on bool, now time.Time) pauseAct {
	p.lapse(now)
	if !on {
		p.untell(now)
		return pauseKeep
	}
	if p.told || p.forgive(now) >= p.stallAfter {
		return pauseKeep // believed already, or over its budget
	}
	p.told, p.toldSince = true, now
	if p.paused && p.higher {
		return p.end(now)
	}
	return pauseKeep
}

// lapse ends a told pause whose notice of its end did not come: the
// peer's pause ends after its grace, ours with it (a stallAfter later).
func (p *replyPause) lapse(now time.Time) {
	if p.told && !now.Before(p.toldSince.Add(p.grace+p.stallAfter)) {
		p.untell(p.toldSince.Add(p.grace + p.stallAfter))
	}
}

// untell ends the told pause at now, charging its time to the debt.
func (p *replyPause) untell(now time.Time) {
	if !p.told {
		return
	}
	p.forgive(now)
	p.told = false
	p.toldDebt += now.Sub(p.toldSince)
}

// spent reports whether nothing of the state is left to remember at
// now: no pause of ours within its grace, no told pause, no debt. Until
// then the peer's budget, which holds it, outlives the peer's streams
// (budget.go): a peer that closed and reopened them would otherwise find
// a fresh state, the debt of its claims forgotten.
func (p *replyPause) spent(now time.Time) bool {
	p.lapse(now)
	return !(p.paused && now.Before(p.since.Add(p.grace))) && !p.told && p.forgive(now) == 0
}

// forgive decays the debt to now and returns it.
func (p *replyPause) forgive(now time.Time) time.Duration {
	if d := now.Sub(p.debtAt); d > 0 {
		p.toldDebt = max(0, p.toldDebt-d/toldDecay)
		p.debtAt = now
	}
	return p.toldDebt
}
