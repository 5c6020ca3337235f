package groups

import (
	"encoding/binary"
	"sync"
	"time"
)

// presenceMemory is how long the order of presence messages about a member
// is remembered after the last of them, and that of a departed peer's
// messages after it left: longer than any of them can still be relayed by
// others (GossipSub forwards a message only when it first sees it, and
// answers gossip from a history of a few seconds).
const presenceMemory = 2 * time.Minute

// maxPresencePerPeer bounds the members of one publisher (all groups
// together) whose order is remembered, that is, those it announced within
// presenceMemory; maxPresence bounds them for all publishers together (a
// peer can sign as any number of publishers, whose messages others relay).
// A message about a new member beyond either bound is refused when it says
// that the member joined, and handed on without being remembered when it
// says that the member left (it can only remove a member known here): a
// peer cannot grow this node's memory without bound by announcing members.
const (
	maxPresencePerPeer = 4096
	maxPresence        = 16 * maxPresencePerPeer
)

// presenceOrder drops presence messages that arrive after a newer one about
// the same member. GossipSub may deliver one publisher's messages out of
// order, through different mesh peers: a "present" overtaken by the
// member's "left" would bring the member back. The order is the
// publisher's sequence number, which go-libp2p-pubsub counts up for every
// message it publishes (and starts from the clock, so a restarted peer's
// messages come after its earlier ones).
type presenceOrder struct {
	mu     sync.Mutex
	by     map[string]*publisherOrder // by publisher (origin); none without members
	total  int                        // members remembered, all publishers together
	pruned time.Time                  // when all publishers' old members were last forgotten
	gone   map[string]time.Time       // publishers that disconnected, and when
}

// publisherOrder is the order of one publisher's members.
type publisherOrder struct {
	last   map[memberKey]memberSeen
	pruned time.Time // when its old members were last forgotten
}

type (
	presenceKey struct{ group, origin, member string }
	memberKey   struct{ group, member string }
	// memberSeen is the last message seen about a member: its sequence
	// number, and when it came.
	memberSeen struct {
		seq uint64
		at  time.Time
	}
)

// presenceVerdict is what newer decides about a presence message.
type presenceVerdict int

const (
	presenceNewer   presenceVerdict = iota // newer than all seen about the member: taken
	presenceStale                          // overtaken by a newer message: dropped
	presenceRefused                        // a member joined beyond the bounds: refused
)

// pruneEvery is how often at most the members of a publisher at its
// bound, or of all publishers at theirs, are scanned for old ones: a
// publisher at the bound cannot make every message scan them.
const pruneEvery = presenceMemory / 8

// newer decides about a presence message with sequence number seqno (as
// pubsub carries it: 8 bytes, big-endian) saying that the member of k
// joined (or is present) or left, and records it when it is newer than
// every message seen about the same member. A message without a sequence
// number cannot be ordered and counts as newer (still within the bounds).
func (o *presenceOrder) newer(k presenceKey, seqno []byte, joined bool, now time.Time) presenceVerdict {
	seq, ordered := uint64(0), len(seqno) == 8
	if ordered {
		seq = binary.BigEndian.Uint64(seqno)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.forgetLocked(now)
	mk := memberKey{k.group, k.member}
	p := o.by[k.origin]
	var last memberSeen
	seen := false
	if p != nil {
		last, seen = p.last[mk]
	}
	if seen && ordered && seq <= last.seq {
		return presenceStale
	}
	if !seen && !o.roomLocked(p, now) {
		if joined {
			return presenceRefused
		}
		return presenceNewer // handed on, not remembered
	}
	if p == nil {
		if o.by == nil {
			o.by = make(map[string]*publisherOrder)
		}
		p = &publisherOrder{last: make(map[memberKey]memberSeen)}
		o.by[k.origin] = p
	}
	if !seen {
		o.total++
	}
	if !ordered {
		seq = last.seq // keeps the order of what comes next
	}
	p.last[mk] = memberSeen{seq: seq, at: now}
	return presenceNewer
}

// roomLocked reports whether a new member of publisher p (nil: none
// remembered yet) fits within the bounds, forgetting old members first if
// it would not.
func (o *presenceOrder) roomLocked(p *publisherOrder, now time.Time) bool {
	if p != nil && len(p.last) >= maxPresencePerPeer {
		if now.Sub(p.pruned) < pruneEvery {
			return false
		}
		p.pruned = now
		o.total -= p.prune(now)
		if len(p.last) >= maxPresencePerPeer {
			return false
		}
	}
	if o.total >= maxPresence {
		if now.Sub(o.pruned) < pruneEvery {
			return false
		}
		o.pruned = now
		for origin, q := range o.by {
			o.total -= q.prune(now)
			if len(q.last) == 0 && q != p {
				delete(o.by, origin)
			}
		}
	}
	return o.total < maxPresence
}

// prune forgets the members announced presenceMemory ago or more and
// returns how many.
func (p *publisherOrder) prune(now time.Time) int {
	n := 0
	for mk, s := range p.last {
		if now.Sub(s.at) >= presenceMemory {
			delete(p.last, mk)
			n++
		}
	}
	return n
}

// peerGone starts the countdown after which a disconnected publisher's
// order is forgotten; peerBack stops it.
func (o *presenceOrder) peerGone(origin string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.gone == nil {
		o.gone = make(map[string]time.Time)
	}
	o.gone[origin] = now
	o.forgetLocked(now)
}

func (o *presenceOrder) peerBack(origin string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.gone, origin)
}

// forgetLocked drops the order of the publishers gone for presenceMemory.
func (o *presenceOrder) forgetLocked(now time.Time) {
	for origin, at := range o.gone {
		if now.Sub(at) >= presenceMemory {
			delete(o.gone, origin)
			if p := o.by[origin]; p != nil {
				o.total -= len(p.last)
				delete(o.by, origin)
			}
		}
	}
}

// heard returns when the last message about the member of k came, if it
// is remembered.
func (o *presenceOrder) heard(k presenceKey) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p := o.by[k.origin]; p != nil {
		if s, ok := p.last[memberKey{k.group, k.member}]; ok {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// size returns how many members' order is remembered.
func (o *presenceOrder) size() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}
