package routing

import (
	"encoding/binary"
	"fmt"
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
		k      presenceKey
		seq    uint64
		joined bool
		newer  bool
	}{
		{x, 10, true, true},                               // joined
		{x, 30, false, true},                              // left
		{x, 20, true, false},                              // a "present" overtaken by the left
		{x, 30, false, false},                             // the left again
		{presenceKey{"lobby", "p1", "y"}, 20, true, true}, // another member
		{presenceKey{"other", "p1", "x"}, 20, true, true}, // another group
		{presenceKey{"lobby", "p2", "x"}, 5, true, true},  // another publisher
		{x, 31, true, true},                               // back
	} {
		if got := o.newer(c.k, seqno(c.seq), c.joined, now); (got == presenceNewer) != c.newer {
			t.Fatalf("%v seq %d: verdict %v, want newer %v", c.k, c.seq, got, c.newer)
		}
	}
	if o.newer(x, nil, true, now) != presenceNewer || o.newer(x, []byte{1}, true, now) != presenceNewer {
		t.Fatal("a message without a sequence number was dropped")
	}
	if o.newer(x, seqno(31), true, now) != presenceStale {
		t.Fatal("a message without a sequence number lost the member's order")
	}
	// A departed publisher's order is kept for presenceMemory, then
	// forgotten; one that comes back keeps it.
	o.peerGone("p1", now)
	if o.newer(x, seqno(25), true, now.Add(presenceMemory/2)) != presenceStale {
		t.Fatal("an old message of a departed publisher was taken")
	}
	o.peerGone("p2", now)
	o.peerBack("p2")
	if n := o.size(); n != 4 {
		t.Fatalf("%d members remembered, want 4", n)
	}
	if o.newer(presenceKey{"lobby", "p3", "z"}, seqno(1), true, now.Add(presenceMemory)) != presenceNewer {
		t.Fatal("a new publisher's message was dropped")
	}
	if n := o.size(); n != 2 { // p2's x and p3's z
		t.Fatalf("%d members remembered after p1 was forgotten, want 2", n)
	}
}

// A publisher's members are remembered up to maxPresencePerPeer: a peer
// announcing more is refused for the new ones (its known members keep
// their order), other publishers are not affected, and members who left
// presenceMemory ago make room again.
func TestPresenceOfAPeerIsBounded(t *testing.T) {
	var o presenceOrder
	now := time.Unix(1000, 0)
	key := func(origin string, i int) presenceKey {
		return presenceKey{"lobby", origin, fmt.Sprintf("m%d", i)}
	}
	seq := uint64(0)
	next := func() []byte { seq++; return seqno(seq) }
	for i := range maxPresencePerPeer {
		if v := o.newer(key("flood", i), next(), true, now); v != presenceNewer {
			t.Fatalf("member %d: verdict %v", i, v)
		}
	}
	if v := o.newer(key("flood", maxPresencePerPeer), next(), true, now); v != presenceRefused {
		t.Fatalf("a member over the bound: verdict %v, want refused", v)
	}
	if v := o.newer(key("flood", 7), next(), false, now); v != presenceNewer {
		t.Fatalf("a known member left: verdict %v", v)
	}
	if v := o.newer(key("other", 0), next(), true, now); v != presenceNewer {
		t.Fatalf("another publisher: verdict %v", v)
	}
	if n := o.size(); n != maxPresencePerPeer+1 {
		t.Fatalf("%d members remembered, want %d", n, maxPresencePerPeer+1)
	}
	// Half the members leave; until presenceMemory passed, their order
	// is kept and no new member is taken.
	for i := range maxPresencePerPeer / 2 {
		if v := o.newer(key("flood", i), next(), false, now); v != presenceNewer {
			t.Fatalf("member %d left: verdict %v", i, v)
		}
	}
	if v := o.newer(key("flood", maxPresencePerPeer), next(), true, now.Add(presenceMemory/2)); v != presenceRefused {
		t.Fatalf("a new member while the left are remembered: verdict %v", v)
	}
	later := now.Add(presenceMemory)
	if v := o.newer(key("flood", maxPresencePerPeer), next(), true, later); v != presenceNewer {
		t.Fatalf("a new member after the left were forgotten: verdict %v", v)
	}
	if n, want := o.size(), maxPresencePerPeer-maxPresencePerPeer/2+1+1; n != want {
		t.Fatalf("%d members remembered, want %d", n, want)
	}
	// A refused publisher does not make every message scan its members:
	// at the bound again, it is refused until presenceMemory/8 passed.
	for i := 0; o.size() < maxPresencePerPeer+1; i++ {
		if v := o.newer(key("flood", 2*maxPresencePerPeer+i), next(), true, later); v != presenceNewer {
			t.Fatalf("filling up again, member %d: verdict %v", i, v)
		}
	}
	if v := o.newer(key("flood", 3*maxPresencePerPeer), next(), true, later.Add(presenceMemory/16)); v != presenceRefused {
		t.Fatalf("at the bound again: verdict %v", v)
	}
}
