package main

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// What a chat shows of other peers' users, who may be hostile: a nick is
// bound to the peer that used it first in this session (the local user's
// to this peer), and a user of another peer claiming it is shown as
// nick@<the last 6 characters of its peer ID>; nobody is renamed because
// of another peer. Each peer may show lineRate lines a second (lineBurst
// at once) in the room and in direct messages; the rest are dropped and
// counted.

const (
	maxBoundNicks = 4096 // nicks bound at once; beyond, new ones show their peer
	lineRate      = 5    // lines a second one peer's users may show
	lineBurst     = 10
	maxSenders    = 1024 // peers whose rate is remembered
)

// nickBook binds nicks to peers. Safe for concurrent use (a user's old
// and new actor overlap during a rename).
type nickBook struct {
	mu    sync.Mutex
	owner map[string]string // nick -> peer ID
}

// bind makes peer the owner of nick (the local user's own nick).
func (b *nickBook) bind(nick, peer string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner == nil {
		b.owner = make(map[string]string)
	}
	b.owner[nick] = peer
}

// show returns how to show nick, used by a user of peer: the nick itself
// when peer owns it (binding it to peer if nobody does), else
// nick@<peer's last 6 characters>.
func (b *nickBook) show(nick, peer string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner == nil {
		b.owner = make(map[string]string)
	}
	own, ok := b.owner[nick]
	if !ok && len(b.owner) < maxBoundNicks {
		b.owner[nick], own, ok = peer, peer, true
	}
	if ok && own == peer {
		return nick
	}
	return nick + "@" + peerTail(peer)
}

// owns reports whether peer owns nick.
func (b *nickBook) owns(nick, peer string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owner[nick] == peer
}

// peerTail is the last 6 characters of a peer ID.
func peerTail(p string) string { return p[max(0, len(p)-6):] }

// splitShown parses a nick as show writes it: nick, or nick@tail.
func splitShown(s string) (nick, tail string) {
	nick, tail, _ = strings.Cut(s, "@")
	return nick, tail
}

// lineLimiter is a token bucket per peer. Safe for concurrent use.
type lineLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*bucket
	dropped atomic.Uint64
}

type bucket struct {
	tokens float64
	last   time.Time
}

// allow reports whether a line of peer may be shown now, and counts it
// as dropped when not.
func (l *lineLimiter) allow(peer string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = make(map[string]*bucket)
	}
	b := l.buckets[peer]
	if b == nil {
		if len(l.buckets) >= maxSenders {
			l.forgetFull(now)
		}
		b = &bucket{tokens: lineBurst, last: now}
		l.buckets[peer] = b
	}
	b.tokens = min(lineBurst, b.tokens+now.Sub(b.last).Seconds()*lineRate)
	b.last = now
	if b.tokens < 1 {
		l.dropped.Add(1)
		return false
	}
	b.tokens--
	return true
}

// forgetFull drops the buckets that have refilled (a new one starts full
// anyway), or all of them if none has.
func (l *lineLimiter) forgetFull(now time.Time) {
	for p, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*lineRate >= lineBurst {
			delete(l.buckets, p)
		}
	}
	if len(l.buckets) >= maxSenders {
		clear(l.buckets)
	}
}
