package groups

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

// A publisher's members are remembered up to maxPresencePerPeer, all
// publishers' up to maxPresence: a join beyond is refused (a leave is
// handed on without being remembered), known members keep their order,
// and members announced presenceMemory ago make room again.
func TestPresenceIsBounded(t *testing.T) {
	o := new(presenceOrder)
	now := time.Unix(1000, 0)
	key := func(origin string, i int) presenceKey {
		return presenceKey{"lobby", origin, fmt.Sprintf("m%d", i)}
	}
	seq := uint64(0)
	next := func() []byte { seq++; return seqno(seq) }
	expect := func(k presenceKey, joined bool, at time.Time, want presenceVerdict) {
		t.Helper()
		if v := o.newer(k, next(), joined, at); v != want {
			t.Fatalf("%v (joined %v) at %v: verdict %v, want %v", k, joined, at.Sub(now), v, want)
		}
	}
	for i := range maxPresencePerPeer {
		expect(key("flood", i), true, now, presenceNewer)
	}
	expect(key("flood", maxPresencePerPeer), true, now, presenceRefused)
	expect(key("flood", maxPresencePerPeer+1), false, now, presenceNewer) // handed on
	expect(key("flood", 7), false, now, presenceNewer)                    // a known member left
	expect(key("other", 0), true, now, presenceNewer)
	if n := o.size(); n != maxPresencePerPeer+1 {
		t.Fatalf("%d members remembered, want %d", n, maxPresencePerPeer+1)
	}
	// Half the members are announced again: while the others were
	// announced less than presenceMemory ago, no new member is taken;
	// then they are forgotten, those announced again are not.
	half := now.Add(presenceMemory / 2)
	for i := range maxPresencePerPeer / 2 {
		expect(key("flood", i), true, half, presenceNewer)
	}
	expect(key("flood", maxPresencePerPeer), true, half, presenceRefused)
	later := now.Add(presenceMemory)
	expect(key("flood", maxPresencePerPeer), true, later, presenceNewer)
	if n, want := o.size(), maxPresencePerPeer/2+1+1; n != want {
		t.Fatalf("%d members remembered, want %d", n, want)
	}
	expect(key("flood", 1), true, later, presenceNewer) // the order of those kept holds
	if v := o.newer(key("flood", 1), seqno(1), false, later); v != presenceStale {
		t.Fatalf("an old message about a kept member: verdict %v", v)
	}
	// At the bound again, the members are not scanned again before
	// pruneEvery passed, even when some are old by then.
	for i := 0; o.size() < maxPresencePerPeer+1; i++ {
		expect(key("flood", 2*maxPresencePerPeer+i), true, later, presenceNewer)
	}
	expiry := half.Add(presenceMemory) // of those announced again at half
	expect(key("flood", 3*maxPresencePerPeer), true, expiry.Add(-pruneEvery/2), presenceRefused)
	expect(key("flood", 3*maxPresencePerPeer), true, expiry, presenceRefused)
	expect(key("flood", 3*maxPresencePerPeer), true, expiry.Add(pruneEvery/2), presenceNewer)

	// All publishers together: maxPresence.
	o = new(presenceOrder)
	for p := 0; o.size() < maxPresence; p++ {
		for i := range maxPresencePerPeer {
			expect(key(fmt.Sprint("signer", p), i), true, now, presenceNewer)
		}
	}
	expect(key("one more", 0), true, now, presenceRefused)
	expect(key("one more", 1), false, now, presenceNewer) // handed on
	if n := o.size(); n != maxPresence {
		t.Fatalf("%d members remembered, want %d", n, maxPresence)
	}
	expect(key("one more", 0), true, later, presenceNewer)
	if n, p := o.size(), len(o.by); n != 1 || p != 1 {
		t.Fatalf("%d members of %d publishers remembered after presenceMemory, want 1 of 1", n, p)
	}
}
