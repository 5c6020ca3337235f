package codec

import (
	"fmt"
	"strings"
	"testing"
)

func TestNameCacheReturnsEqualStrings(t *testing.T) {
	var c nameCache
	var names []string
	for i := range 500 {
		names = append(names, fmt.Sprintf("actor-%d", i))
	}
	names = append(names, "", "x", strings.Repeat("long", 40), "café")
	for round := range 3 {
		for i, n := range names {
			other := names[(i+7)%len(names)]
			a, b, ty := c.lookup([]byte(n), []byte(other), []byte("chat.Say"))
			if a != n || b != other || ty != "chat.Say" {
				t.Fatalf("round %d: lookup(%q, %q) = %q, %q, %q", round, n, other, a, b, ty)
			}
		}
	}
}

func TestNameCacheSparesAllocations(t *testing.T) {
	var c nameCache
	to, from, typ := []byte("lobby"), []byte("alice"), []byte("chat.Say")
	c.lookup(to, from, typ)
	if allocs := testing.AllocsPerRun(100, func() { c.lookup(to, from, typ) }); allocs != 0 {
		t.Errorf("cached lookup: %v allocations, want 0", allocs)
	}
	long := []byte(strings.Repeat("n", nameCacheMaxLen+1))
	if allocs := testing.AllocsPerRun(100, func() { c.lookup(long, from, typ) }); allocs != 1 {
		t.Errorf("lookup of an uncacheable name: %v allocations, want 1", allocs)
	}
}

func TestReadEnvelopeSteadyStateAllocs(t *testing.T) {
	fr := NewFrameReader(&repeatReader{data: frames(t, chatEnvelope(t, testPeerID))}, 0)
	var e Envelope
	if err := fr.ReadEnvelope(&e); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := fr.ReadEnvelope(&e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("ReadEnvelope of a repeated envelope: %v allocations, want 1", allocs)
	}
}
