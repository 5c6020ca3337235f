package discovery

import (
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// After a peer disconnects, its advertisement relayed by others is
// refused for its TTL (a departed peer is not brought back by the copies
// still held elsewhere), unless the copy is newer than the one held when
// it disconnected, or of a new incarnation: proof that it still
// publishes, only no longer connected here. Gossip from it is taken.
func TestRelayedAdOfADisconnectedPeer(t *testing.T) {
	h := testhost.NewHost(t)
	d := &Directory{h: h, cfg: adsConfig{TTL: 90 * time.Second}, peers: make(map[libp2ppeer.ID]adEntry), gone: make(map[libp2ppeer.ID]goneEntry)}
	p := testhost.NewPeerID(t)
	ad := func(inc, seq uint64) *Advertisement {
		return &Advertisement{Peer: []byte(p), Incarnation: inc, Seq: seq, TTLSeconds: 90}
	}
	if ok, _ := d.store(ad(1, 5), []byte("5"), time.Minute, false, ""); !ok {
		t.Fatal("gossip of a new peer not stored")
	}
	// What expire does when p disconnects.
	d.mu.Lock()
	d.gone[p] = goneEntry{at: time.Now(), inc: 1, seq: d.peers[p].ad.Seq}
	d.dropLocked(p)
	d.mu.Unlock()
	for _, c := range []struct {
		name    string
		ad      *Advertisement
		relayed bool
		want    bool
	}{
		{"the copy held when it left, relayed", ad(1, 5), true, false},
		{"an older one, relayed", ad(1, 4), true, false},
		{"a newer one, relayed", ad(1, 6), true, true},
		{"a new incarnation's, relayed", ad(2, 1), true, true},
	} {
		d.mu.Lock()
		d.dropLocked(p)
		d.mu.Unlock()
		if ok, _ := d.store(c.ad, []byte("x"), time.Minute, c.relayed, ""); ok != c.want {
			t.Errorf("%s: stored %v, want %v", c.name, ok, c.want)
		}
	}
	d.mu.Lock()
	d.dropLocked(p)
	d.mu.Unlock()
	if ok, _ := d.store(ad(1, 5), []byte("5"), time.Minute, false, ""); !ok {
		t.Fatal("gossip from the peer itself refused after it disconnected")
	}
	// A peer that disconnected when nothing of it was held: refused.
	q := testhost.NewPeerID(t)
	d.mu.Lock()
	d.gone[q] = goneEntry{at: time.Now()}
	d.mu.Unlock()
	if ok, _ := d.store(&Advertisement{Peer: []byte(q), Incarnation: 1, Seq: 9, TTLSeconds: 90}, []byte("q"), time.Minute, true, ""); ok {
		t.Fatal("a relayed ad of a peer gone with nothing held was stored")
	}
}
