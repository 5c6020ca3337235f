package routing

import (
	"encoding/binary"
	"sync"
	"time"
)

// presenceMemory is how long the order of a departed peer's presence
// messages is remembered: longer than any of its messages can still be
// relayed by others (GossipSub forwards a message only when it first sees
// it, and answers gossip from a history of a few seconds).
const presenceMemory = 2 * time.Minute

// presenceOrder drops presence messages that arrive after a newer one about
// the same member. GossipSub may deliver one publisher's messages out of
// order, through different mesh peers: a "present" overtaken by the
// member's "left" would bring the member back. The order is the
// publisher's sequence number, which go-libp2p-pubsub counts up for every
// message it publishes (and starts from the clock, so a restarted peer's
// messages come after its earlier ones).
type presenceOrder struct {
	mu   sync.Mutex
	last map[presenceKey]uint64
	gone map[string]time.Time // publishers that disconnected, and when
}

type presenceKey struct{ group, origin, member string }

// newer reports whether a presence message with sequence number seqno (as
// pubsub carries it: 8 bytes, big-endian) is newer than every message
// seen about the same member, and records it. A message without a
// sequence number cannot be ordered and counts as newer.
func (o *presenceOrder) newer(k presenceKey, seqno []byte, now time.Time) bool {
	if len(seqno) != 8 {
		return true
	}
	seq := binary.BigEndian.Uint64(seqno)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.forgetLocked(now)
	if last, ok := o.last[k]; ok && seq <= last {
		return false
	}
	if o.last == nil {
		o.last = make(map[presenceKey]uint64)
	}
	o.last[k] = seq
	return true
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
		if now.Sub(at) < presenceMemory {
			continue
		}
		delete(o.gone, origin)
		for k := range o.last {
			if k.origin == origin {
				delete(o.last, k)
			}
		}
	}
}

// size returns how many members' order is remembered.
func (o *presenceOrder) size() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.last)
}
