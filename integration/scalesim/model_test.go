package scalesim

import (
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/discovery"
)

// Below the lookup threshold the advertisements cost every peer in
// proportion to the mesh; from it on (a narrow directory) they cost
// nothing in gossip and the exchanges' cost depends on c alone.
func TestModelAdsAboveTheThreshold(t *testing.T) {
	const c = 24
	ttl := 90 * time.Second
	small := Model(discovery.DefaultLookupAbove-1, c, ttl)
	if small.Ads <= 0 || small.Pulls <= 0 {
		t.Fatalf("below the threshold: %+v, want ads and pulls", small)
	}
	at, big := Model(discovery.DefaultLookupAbove, c, ttl), Model(10_000, c, ttl)
	if at.Ads != 0 || big.Ads != 0 {
		t.Fatalf("above the threshold ads gossip costs %v and %v, want 0", at.Ads, big.Ads)
	}
	if at.Pulls != big.Pulls || at.Pulls <= 0 {
		t.Fatalf("exchanges at %d peers %v B/s, at 10,000 %v: want the same, not 0", discovery.DefaultLookupAbove, at.Pulls, big.Pulls)
	}
}
