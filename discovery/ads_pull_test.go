package discovery

import (
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// A peer new to the directory, however its advertisement came, makes the
// pulls frequent again: with a connection budget a peer dials few others,
// and its pulls, backed off to a third of the TTL while the first
// exchanges brought nothing, would leave the ads gossip lost missing for
// many republications (Scale100 took 239 s to all-know-all without this,
// 20 s with it). A newer advertisement of a peer held does not.
func TestNewPeerMakesPullsFrequent(t *testing.T) {
	h := testhost.NewHost(t)
	d := &Directory{h: h, cfg: adsConfig{TTL: 90 * time.Second}, peers: make(map[libp2ppeer.ID]adEntry),
		gone: make(map[libp2ppeer.ID]goneEntry), pullNow: make(chan struct{}, 1)}
	p := testhost.NewPeerID(t)
	ad := func(seq uint64) *Advertisement {
		return &Advertisement{Peer: []byte(p), Incarnation: 1, Seq: seq, TTLSeconds: 90}
	}
	if ok, added := d.store(ad(1), []byte("1"), time.Minute, true, ""); !ok || !added {
		t.Fatalf("gossip of a new peer: stored %v, added %v", ok, added)
	}
	select {
	case <-d.pullNow:
	default:
		t.Fatal("a new peer's advertisement did not ask for a pull")
	}
	if ok, added := d.store(ad(2), []byte("2"), time.Minute, true, ""); !ok || added {
		t.Fatalf("a newer advertisement: stored %v, added %v", ok, added)
	}
	select {
	case <-d.pullNow:
		t.Fatal("a newer advertisement of a peer held asked for a pull")
	default:
	}
}
