//go:build linux

package integration

import (
	"fmt"
	"testing"
)

// chaosSeqState is what b's seq counted (netns_chaos_peer_test.go): its
// methods are the loss accounting of TestChaos, pure so that
// TestChaosSeqCount can show it fails on a silent loss.
type chaosSeqState struct {
	Received, Reorders, Covered, Silent, Downs int
	Last                                       map[int]int  // lane → last number
	DownSince                                  map[int]bool // lane → a Down since its last number
}

func newChaosSeqState() chaosSeqState {
	return chaosSeqState{Last: map[int]int{}, DownSince: map[int]bool{}}
}

// downSince reports whether a Down for a's node came since lane's last
// arrival; for a lane with none yet, since seq started (the run starts
// after it, with no Down before).
func (st *chaosSeqState) downSince(lane int) bool {
	if _, ok := st.Last[lane]; !ok {
		return st.Downs > 0
	}
	return st.DownSince[lane]
}

// arrive counts number n (lane n/chaosLane, its (n%chaosLane)th) and
// returns what is wrong with it, if anything: a reorder (or duplicate),
// or the numbers it skipped with no Down since the lane's last arrival.
func (st *chaosSeqState) arrive(n int) (wrong string) {
	st.Received++
	lane, i := n/chaosLane, n%chaosLane
	last, ok := st.Last[lane]
	if !ok {
		last = -1
	}
	switch {
	case i <= last:
		st.Reorders++
		return fmt.Sprintf("reorder send %d after %d", n, lane*chaosLane+last)
	case i > last+1 && st.downSince(lane):
		st.Covered += i - last - 1
	case i > last+1:
		st.Silent += i - last - 1
		wrong = fmt.Sprintf("silent loss of sends %d..%d", lane*chaosLane+last+1, n-1)
	}
	st.Last[lane], st.DownSince[lane] = i, false
	return wrong
}

// down counts a Down for a's node.
func (st *chaosSeqState) down() {
	st.Downs++
	for lane := range st.Last {
		st.DownSince[lane] = true
	}
}

// tail returns how many of perLane numbers of lane never arrived at the
// end, and whether a Down covers them.
func (st *chaosSeqState) tail(lane, perLane int) (missing int, covered bool) {
	last, ok := st.Last[lane]
	if !ok {
		last = -1
	}
	return max(0, perLane-1-last), st.downSince(lane)
}

// TestChaosSeqCount: TestChaos's loss accounting finds a gap with no
// Down since the lane's last arrival, a reorder and a duplicate, and
// counts a gap after a Down as covered, also for a lane's first numbers
// and at a lane's end.
func TestChaosSeqCount(t *testing.T) {
	st := newChaosSeqState()
	for _, n := range []int{0, 1, chaosLane} {
		if w := st.arrive(n); w != "" {
			t.Fatalf("arrive(%d): %s", n, w)
		}
	}
	if w := st.arrive(3); st.Silent != 1 || w == "" { // 2 lost, no Down
		t.Fatalf("a gap with no Down: silent %d, %q", st.Silent, w)
	}
	if w := st.arrive(3); st.Reorders != 1 || w == "" {
		t.Fatalf("a duplicate: reorders %d, %q", st.Reorders, w)
	}
	if w := st.arrive(2); st.Reorders != 2 || w == "" {
		t.Fatalf("a reorder: reorders %d, %q", st.Reorders, w)
	}
	st.down()
	if w := st.arrive(6); st.Covered != 2 || w != "" { // 4, 5 lost with a Down
		t.Fatalf("a gap after a Down: covered %d, %q", st.Covered, w)
	}
	if w := st.arrive(8); st.Silent != 2 || w == "" { // 7: the Down was before 6
		t.Fatalf("a gap after a covered one: silent %d, %q", st.Silent, w)
	}
	if w := st.arrive(2*chaosLane + 2); st.Covered != 4 || w != "" { // a lane's first two, after the Down
		t.Fatalf("a new lane's first numbers after a Down: covered %d, %q", st.Covered, w)
	}
	if missing, covered := st.tail(0, 10); missing != 1 || covered {
		t.Fatalf("lane 0's end: %d missing, covered %v; want 1, false", missing, covered)
	}
	if missing, covered := st.tail(1, 10); missing != 9 || !covered {
		t.Fatalf("lane 1's end: %d missing, covered %v; want 9, true", missing, covered)
	}
	if missing, covered := st.tail(3, 10); missing != 10 || !covered {
		t.Fatalf("lane 3, none arrived: %d missing, covered %v; want 10, true", missing, covered)
	}
	fresh := newChaosSeqState()
	if fresh.arrive(1); fresh.Silent != 1 {
		t.Fatalf("a new lane's first number lost with no Down: silent %d", fresh.Silent)
	}
}
