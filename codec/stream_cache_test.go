package codec

import (
	"bytes"
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
			a, b, ty := c.lookup(nil, []byte(n), []byte(other), []byte("chat.Say"))
			if a != n || b != other || ty != "chat.Say" {
				t.Fatalf("round %d: lookup(%q, %q) = %q, %q, %q", round, n, other, a, b, ty)
			}
		}
	}
}

func TestNameCacheSparesAllocations(t *testing.T) {
	var c nameCache
	to, from, typ := []byte("lobby"), []byte("alice"), []byte("chat.Say")
	c.lookup(nil, to, from, typ)
	if allocs := testing.AllocsPerRun(100, func() { c.lookup(nil, to, from, typ) }); allocs != 0 {
		t.Errorf("cached lookup: %v allocations, want 0", allocs)
	}
	long := []byte(strings.Repeat("n", nameCacheMaxLen+1))
	if allocs := testing.AllocsPerRun(100, func() { c.lookup(nil, long, from, typ) }); allocs != 1 {
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
	// Names come from the cache and bodies from shared blocks: far less
	// than one allocation per envelope (AllocsPerRun rounds down).
	if allocs != 0 {
		t.Errorf("ReadEnvelope of a repeated envelope: %v allocations, want < 1", allocs)
	}
}

func TestStreamCacheBytesDoNotOverlap(t *testing.T) {
	var c streamCache
	var slices [][]byte
	for i := range 200 {
		n := []int{1, 7, 100, slabMaxObject, slabMaxObject + 1, 3000}[i%6]
		b := c.bytes(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("bytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		for j := range b {
			b[j] = byte(i)
		}
		slices = append(slices, b)
	}
	// Appending to one slice must not write into the next one.
	for i := range slices {
		slices[i] = append(slices[i], 0xee)
	}
	for i, b := range slices {
		for _, v := range b[:len(b)-1] {
			if v != byte(i) {
				t.Fatalf("slice %d was overwritten", i)
			}
		}
	}
}

func TestReadEnvelopeBodiesAreIndependent(t *testing.T) {
	a := &Envelope{Kind: KindUser, To: "a", Body: []byte{0x41, 0x01}}
	b := &Envelope{Kind: KindUser, To: "b", FromPeer: []byte{9, 9}, Body: []byte{0x41, 0x02}}
	fr := NewFrameReader(bytes.NewReader(frames(t, a, b)), 0)
	var ga, gb Envelope
	if err := fr.ReadEnvelope(&ga); err != nil {
		t.Fatal(err)
	}
	if err := fr.ReadEnvelope(&gb); err != nil {
		t.Fatal(err)
	}
	ga.Body = append(ga.Body, 0xff, 0xff, 0xff)
	ga.Body[0] = 0
	if !bytes.Equal(gb.Body, []byte{0x41, 0x02}) || !bytes.Equal(gb.FromPeer, []byte{9, 9}) {
		t.Errorf("writing to one envelope changed another: %+v", gb)
	}
}
