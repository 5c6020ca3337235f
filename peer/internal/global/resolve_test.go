package global

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// nearest returns the peers sorted by their distance to name's key.
func nearest(name string, ids ...libp2ppeer.ID) []libp2ppeer.ID {
	key := globalKey(name)
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b libp2ppeer.ID) int {
		da, db := globalDistance(key, a), globalDistance(key, b)
		return bytes.Compare(da[:], db[:])
	})
	return out
}

// The winner of a name is computed from the claims alone: the same
// whatever order they come in and whichever side of a healed partition
// computes it; claims of other names do not matter; a peer's two claims
// resolve to one actor.
func TestGlobalWinner(t *testing.T) {
	a, b, c := testhost.NewPeerID(t), testhost.NewPeerID(t), testhost.NewPeerID(t)
	byDist := nearest("leader", a, b, c)
	near, mid, far := byDist[0], byDist[1], byDist[2]
	claim := func(p libp2ppeer.ID, actor string) globalClaim {
		return globalClaim{Name: "leader", Peer: p, Actor: actor}
	}
	other := globalClaim{Name: "other", Peer: near, Actor: "x"}
	tests := []struct {
		name   string
		claims []globalClaim
		want   globalClaim
		ok     bool
	}{
		{"none", nil, globalClaim{}, false},
		{"only other names", []globalClaim{other}, globalClaim{}, false},
		{"one", []globalClaim{claim(far, "f")}, claim(far, "f"), true},
		{"nearest of two", []globalClaim{claim(far, "f"), claim(mid, "m")}, claim(mid, "m"), true},
		{"nearest of three", []globalClaim{claim(mid, "m"), claim(near, "n"), claim(far, "f")}, claim(near, "n"), true},
		{"other names ignored", []globalClaim{claim(far, "f"), {Name: "other", Peer: mid}}, claim(far, "f"), true},
		{"one peer twice", []globalClaim{claim(near, "z"), claim(near, "b")}, claim(near, "b"), true},
	}
	for _, tt := range tests {
		got, ok := globalWinner("leader", tt.claims)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: winner %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
		// Any order gives the same winner.
		shuffled := slices.Clone(tt.claims)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got2, ok2 := globalWinner("leader", shuffled); got2 != got || ok2 != ok {
			t.Errorf("%s: order changed the winner: %+v, want %+v", tt.name, got2, got)
		}
	}
}

// A partition heals: each side held its own claim of the name, and once
// the claims are exchanged both sides compute the same single winner, the
// same one as before the other side's claims arrived for the side that
// held it, and the loser's own view turns to it too.
func TestGlobalWinnerHeal(t *testing.T) {
	for range 20 { // random IDs: either side may be nearer
		left, right := testhost.NewPeerID(t), testhost.NewPeerID(t)
		lc := globalClaim{Name: "leader", Peer: left, Actor: "l"}
		rc := globalClaim{Name: "leader", Peer: right, Actor: "r"}
		// Before: each side sees its own claim win.
		if w, _ := globalWinner("leader", []globalClaim{lc}); w != lc {
			t.Fatalf("left alone: %+v", w)
		}
		if w, _ := globalWinner("leader", []globalClaim{rc}); w != rc {
			t.Fatalf("right alone: %+v", w)
		}
		// After: left holds [own, right's], right holds [own, left's].
		wl, _ := globalWinner("leader", []globalClaim{lc, rc})
		wr, _ := globalWinner("leader", []globalClaim{rc, lc})
		if wl != wr {
			t.Fatalf("sides disagree after the heal: %+v and %+v", wl, wr)
		}
		if want := nearest("leader", left, right)[0]; wl.Peer != want {
			t.Fatalf("winner %v, want the nearer %v", wl.Peer, want)
		}
	}
}
