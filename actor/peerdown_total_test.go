package actor

import (
	"fmt"
	"testing"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// TestRemoteWatchTotal: past the node-wide total, a peer holding
// spi.RemoteWatchFloor watches or more is refused, one holding fewer is still
// admitted; a peer going down, or a watch going, makes room again.
func TestRemoteWatchTotal(t *testing.T) {
	var x remoteIndex
	const limit, total = 5_000, 1_500
	watch := func(peer string, i int) bool {
		return x.addWithin(remoteEdge{kind: edgeWatcher, local: refOf("me", "a"), remote: refOf(peer, "w"), id: MonitorID(i)}, limit, total)
	}
	for i := range 1_200 {
		if !watch("A", i) {
			t.Fatalf("A's watch %d refused below the total", i)
		}
	}
	for i := range 400 { // past the total at 300, but B holds fewer than the floor
		if !watch("B", i) {
			t.Fatalf("B's watch %d refused, B under the floor", i)
		}
	}
	if x.watchTotal() != 1_600 {
		t.Fatalf("total %d, want 1600", x.watchTotal())
	}
	if watch("A", 5_000) {
		t.Fatal("A, over the floor, admitted past the total")
	}
	x.remove(remoteEdge{kind: edgeWatcher, local: refOf("me", "a"), remote: refOf("B", "w"), id: 0})
	if watch("A", 5_001) {
		t.Fatal("A admitted at 1,599 of 1,500")
	}
	x.take("B")
	if x.watchTotal() != 1_200 {
		t.Fatalf("after B went down: total %d, want 1200", x.watchTotal())
	}
	if !watch("A", 5_002) {
		t.Fatal("A refused after B went down")
	}
	// Many identities: each under the floor gets in, but none beyond it,
	// so what they hold is at most the total plus the floor each.
	for p := range 10 {
		for i := range spi.RemoteWatchFloor + 10 {
			watch(fmt.Sprintf("S%d", p), i)
		}
	}
	if got, most := x.watchTotal(), 1_201+10*spi.RemoteWatchFloor; got > most {
		t.Fatalf("total %d after 10 identities, want at most %d", got, most)
	}
}

func TestRemoteWatchTotalValidated(t *testing.T) {
	if _, err := New(withRemoteWatchTotal(0)); err == nil {
		t.Fatal("a total of 0 accepted")
	}
}
