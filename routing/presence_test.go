package routing

import (
	"encoding/binary"
	"testing"
	"time"
)

func seqno(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// A presence message older than one already seen about the same member is
// dropped; other members, groups and publishers have their own order.
func TestPresenceOrder(t *testing.T) {
	var o presenceOrder
	now := time.Unix(1000, 0)
	x := presenceKey{"lobby", "p1", "x"}
	for _, c := range []struct {
		k     presenceKey
		seq   uint64
		newer bool
	}{
		{x, 10, true},  // joined
		{x, 30, true},  // left
		{x, 20, false}, // a "present" overtaken by the left
		{x, 30, false}, // the left again
		{presenceKey{"lobby", "p1", "y"}, 20, true}, // another member
		{presenceKey{"other", "p1", "x"}, 20, true}, // another group
		{presenceKey{"lobby", "p2", "x"}, 5, true},  // another publisher
		{x, 31, true}, // back
	} {
		if got := o.newer(c.k, seqno(c.seq), now); got != c.newer {
			t.Fatalf("%v seq %d: newer %v, want %v", c.k, c.seq, got, c.newer)
		}
	}
	if !o.newer(x, nil, now) || !o.newer(x, []byte{1}, now) {
		t.Fatal("a message without a sequence number was dropped")
	}
	// A departed publisher's order is kept for presenceMemory, then
	// forgotten; one that comes back keeps it.
	o.peerGone("p1", now)
	if o.newer(x, seqno(25), now.Add(presenceMemory/2)) {
		t.Fatal("an old message of a departed publisher was taken")
	}
	o.peerGone("p2", now)
	o.peerBack("p2")
	if n := o.size(); n != 4 {
		t.Fatalf("%d members remembered, want 4", n)
	}
	if !o.newer(presenceKey{"lobby", "p3", "z"}, seqno(1), now.Add(presenceMemory)) {
		t.Fatal("a new publisher's message was dropped")
	}
	if n := o.size(); n != 2 { // p2's x and p3's z
		t.Fatalf("%d members remembered after p1 was forgotten, want 2", n)
	}
}
