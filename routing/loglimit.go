package routing

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// What a hostile peer's protocol errors cost in logs: each kind of
// error of a peer is logged once per logEvery, with the number of its
// kind left unlogged since the last line ("suppressed"); the counters
// (Stats) count them all. A peer resetting 4,000 streams a second logs a
// handful of lines a minute.

const (
	// logEvery is the interval between two lines of one kind of one
	// peer.
	logEvery = 10 * time.Second
	// maxLogKeys bounds the peers and kinds remembered; beyond, the
	// newcomers share one slot (so many identities log a few lines
	// between them, not a few each).
	maxLogKeys = 4096
)

// logLimiter decides which of a stream of events, by key, is logged. It
// is a pure core: time comes in as now. Safe for concurrent use. The zero
// value logs once per logEvery and remembers maxLogKeys keys.
type logLimiter struct {
	every time.Duration // 0: logEvery
	max   int           // 0: maxLogKeys
	mu    sync.Mutex
	slots map[logKey]*logSlot // guarded by mu
	// freeAt (guarded by mu) is the earliest a slot's interval ends, as
	// of the last forgetLocked: before it, a full table has nothing to
	// forget, and a key beyond it goes to the overflow slot at once
	// rather than scan every slot each time (many identities' errors).
	freeAt time.Time
	scans  int // forgetLocked's scans, for tests
}

type logKey struct{ peer, msg string }

type logSlot struct {
	last       time.Time // when a line of the slot was last logged
	suppressed int       // events since, not logged
}

// overflowPeer is the slot of the keys beyond max.
const overflowPeer = "(other peers)"

// allow reports whether an event of key at now is logged and, if so,
// how many of its key were not since its last line.
func (l *logLimiter) allow(key logKey, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slots == nil {
		l.slots = make(map[logKey]*logSlot)
		l.every = cmp.Or(l.every, logEvery)
		l.max = cmp.Or(l.max, maxLogKeys)
	}
	s := l.slots[key]
	if s == nil {
		if len(l.slots) >= l.max && !now.Before(l.freeAt) {
			l.forgetLocked(now)
		}
		if len(l.slots) >= l.max {
			key.peer = overflowPeer
			s = l.slots[key]
		}
		if s == nil {
			l.slots[key] = &logSlot{last: now}
			return true, 0
		}
	}
	if now.Sub(s.last) < l.every {
		s.suppressed++
		return false, 0
	}
	n := s.suppressed
	s.last, s.suppressed = now, 0
	return true, n
}

// forgetLocked drops the slots whose interval is over and that have
// nothing suppressed: a new event of theirs would be logged anyway. If
// that frees nothing, it drops those whose interval is over with some
// suppressed, the count of which is then never logged (the counters
// have it): else peers that came, erred twice and left would keep
// every newcomer in the overflow slot for good.
// It sets freeAt: slots made later end their interval after it.
func (l *logLimiter) forgetLocked(now time.Time) {
	l.scans++
	for k, s := range l.slots {
		if s.suppressed == 0 && now.Sub(s.last) >= l.every {
			delete(l.slots, k)
		}
	}
	if len(l.slots) >= l.max {
		for k, s := range l.slots {
			if now.Sub(s.last) >= l.every {
				delete(l.slots, k)
			}
		}
	}
	l.freeAt = now.Add(l.every)
	for _, s := range l.slots {
		if end := s.last.Add(l.every); end.Before(l.freeAt) {
			l.freeAt = end
		}
	}
}

// logPeer logs msg about p at level, once per logEvery for each p and
// msg (see logLimiter); a line after others were suppressed says how
// many with "suppressed". Safe for concurrent use.
func (r *Router) logPeer(level slog.Level, p libp2ppeer.ID, msg string, args ...any) {
	if !r.log.Enabled(context.Background(), level) {
		return
	}
	ok, n := r.logLimit.allow(logKey{p.String(), msg}, time.Now())
	if !ok {
		return
	}
	args = append([]any{"peer", p}, args...)
	if n > 0 {
		args = append(args, "suppressed", n, "interval", r.logLimit.interval())
	}
	r.log.Log(context.Background(), level, msg, args...)
}

// interval returns the interval between two lines of one key.
func (l *logLimiter) interval() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cmp.Or(l.every, logEvery)
}
