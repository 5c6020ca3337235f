package routing

import (
	"encoding/binary"
	"sync"
	"time"
)

// presenceMemory is how long the order of a departed peer's presence
// messages is remembered, and that of a member who left: longer than any of
// its messages can still be relayed by others (GossipSub forwards a message
// only when it first sees it, and answers gossip from a history of a few
// seconds).
const presenceMemory = 2 * time.Minute

// maxPresencePerPeer bounds the group members of one publisher (all groups
// together) whose order is remembered: those present, and those who left
// less than presenceMemory ago. A peer announcing more is refused for the
// new ones, so that a peer cannot grow this node's memory without bound by
// announcing members.
const maxPresencePerPeer = 4096

// presenceOrder drops presence messages that arrive after a newer one about
// the same member. GossipSub may deliver one publisher's messages out of
// order, through different mesh peers: a "present" overtaken by the
// member's "left" would bring the member back. The order is the
// publisher's sequence number, which go-libp2p-pubsub counts up for every
// message it publishes (and starts from the clock, so a restarted peer's
// messages come after its earlier ones).
type presenceOrder struct {
	mu   sync.Mutex
	by   map[string]*publisherOrder // by publisher (origin)
	gone map[string]time.Time       // publishers that disconnected, and when
}

// publisherOrder is the order of one publisher's members.
type publisherOrder struct {
	last   map[memberKey]memberSeen
	pruned time.Time // when the members who left were last forgotten
}

type (
	presenceKey struct{ group, origin, member string }
	memberKey   struct{ group, member string }
	// memberSeen is the last message seen about a member: its sequence
	// number, and when it said that the member left (zero: present).
	memberSeen struct {
		seq  uint64
		left time.Time
	}
)

// presenceVerdict is what newer decides about a presence message.
type presenceVerdict int

const (
	presenceNewer   presenceVerdict = iota // newer than all seen about the member: taken
	presenceStale                          // overtaken by a newer message: dropped
	presenceRefused                        // a new member over maxPresencePerPeer: refused
)

// newer decides about a presence message with sequence number seqno (as
// pubsub carries it: 8 bytes, big-endian) saying that the member of k
// joined (or is present) or left, and records it when it is newer than
// every message seen about the same member. A message without a sequence
// number cannot be ordered and counts as newer (still within the
// publisher's bound).
func (o *presenceOrder) newer(k presenceKey, seqno []byte, joined bool, now time.Time) presenceVerdict {
	seq, ordered := uint64(0), len(seqno) == 8
	if ordered {
		seq = binary.BigEndian.Uint64(seqno)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.forgetLocked(now)
	p := o.by[k.origin]
	if p == nil {
		if o.by == nil {
			o.by = make(map[string]*publisherOrder)
		}
		p = &publisherOrder{last: make(map[memberKey]memberSeen)}
		o.by[k.origin] = p
	}
	mk := memberKey{k.group, k.member}
	last, seen := p.last[mk]
	switch {
	case seen && ordered && seq <= last.seq:
		return presenceStale
	case !seen && len(p.last) >= maxPresencePerPeer && !p.prune(now):
		return presenceRefused
	}
	s := memberSeen{seq: seq}
	if !ordered {
		s.seq = last.seq // keeps the order of what comes next
	}
	if !joined {
		s.left = now
	}
	p.last[mk] = s
	return presenceNewer
}

// prune forgets the members who left presenceMemory ago or more, at most
// once per presenceMemory/8 (a publisher at its bound cannot make every
// message scan its members), and reports whether room was made.
func (p *publisherOrder) prune(now time.Time) bool {
	if now.Sub(p.pruned) < presenceMemory/8 {
		return false
	}
	p.pruned = now
	for mk, s := range p.last {
		if !s.left.IsZero() && now.Sub(s.left) >= presenceMemory {
			delete(p.last, mk)
		}
	}
	return len(p.last) < maxPresencePerPeer
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
			delete(o.by, origin)
		}
	}
}

// size returns how many members' order is remembered.
func (o *presenceOrder) size() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, p := range o.by {
		n += len(p.last)
	}
	return n
}
