package redial

import (
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// TestRedialDelay: the waits grow from redialBase, are capped, jittered
// by at most half, and turn slow after redialFast tries; a heal is
// noticed within redialCap + redialDialTimeout.
func TestRedialDelay(t *testing.T) {
	if got := redialDelay(0, 0); got != redialBase {
		t.Fatalf("first wait %v", got)
	}
	for n := range redialFast {
		full := min(redialBase<<min(n, 16), redialCap)
		lo, hi := redialDelay(n, 0.999), redialDelay(n, 0)
		if hi != full || lo < full/2 || lo > hi {
			t.Fatalf("try %d: waits [%v, %v], want [%v/2, %v]", n, lo, hi, full, full)
		}
	}
	if redialDelay(redialFast, 0.5) != redialSlow || redialDelay(1000, 0) != redialSlow {
		t.Fatal("after the fast tries, not redialSlow")
	}
	if redialCap+redialDialTimeout > 5*time.Second {
		t.Fatalf("a heal may take %v to be noticed", redialCap+redialDialTimeout)
	}
}

// TestRedialDeferral: of two peers that declared each other gone, only
// the one with the greater ID waits before its first redial, so that
// their SYNs do not cross; a peer not declared is redialed at once.
func TestRedialDeferral(t *testing.T) {
	lo, hi := libp2ppeer.ID("a"), libp2ppeer.ID("b")
	for _, c := range []struct {
		self, p libp2ppeer.ID
		lost    bool
		want    time.Duration
	}{
		{hi, lo, true, redialDefer},
		{lo, hi, true, 0},
		{hi, lo, false, 0},
		{lo, hi, false, 0},
	} {
		if got := redialDeferral(c.self, c.p, c.lost); got != c.want {
			t.Errorf("redialDeferral(%q, %q, lost %v) = %v, want %v", c.self, c.p, c.lost, got, c.want)
		}
	}
	if redialDefer+redialCap+redialDialTimeout > 7*time.Second {
		t.Fatalf("a deferred heal may take %v to be noticed", redialDefer+redialCap+redialDialTimeout)
	}
}
