package discovery

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestRelayedEntriesBoundedPerRelayer: the advertisements of made-up
// peers that one peer relays are held up to maxRelayedPerPeer, for the
// node's own TTL at most; in a full directory another relayer's take the
// place of the one holding the most, but never of first-hand entries;
// a first-hand copy of a relayed entry clears its charge.
func TestRelayedEntriesBoundedPerRelayer(t *testing.T) {
	h := testhost.NewHost(t, libp2p.NoListenAddrs)
	d := &Directory{cfg: adsConfig{TTL: defaultTTL}, h: h, peers: make(map[libp2ppeer.ID]adEntry)}
	madeUp := func() *Advertisement {
		return &Advertisement{Peer: []byte(testhost.NewPeerID(t)), TTLSeconds: 900}
	}
	mallory, honest := testhost.NewPeerID(t), testhost.NewPeerID(t)
	relay := func(via libp2ppeer.ID, n int) (stored int) {
		for range n {
			if ok, _ := d.store(madeUp(), []byte("relayed"), 15*time.Minute, true, via); ok {
				stored++
			}
		}
		return stored
	}
	if got := relay(mallory, 2*maxRelayedPerPeer); got != maxRelayedPerPeer {
		t.Fatalf("one relayer got %d entries in, want %d", got, maxRelayedPerPeer)
	}
	end := time.Now() // after every store
	for id, e := range d.peers {
		if left := e.expires.Sub(end); left > defaultTTL {
			t.Fatalf("a relayed entry of %v kept for %v, want at most the node's TTL %v", id, left, defaultTTL)
		}
		break
	}
	if d.Stats().RelayRefused != maxRelayedPerPeer {
		t.Fatalf("refused %d, want %d", d.Stats().RelayRefused, maxRelayedPerPeer)
	}
	// First-hand entries fill the rest (made-up here; as far as the store
	// knows, their peers sent them).
	own := map[libp2ppeer.ID]bool{}
	for len(d.peers) < maxDirectory {
		ad := madeUp()
		if ok, _ := d.store(ad, []byte("own"), time.Minute, false, ""); !ok {
			t.Fatal("a first-hand entry refused before the directory is full")
		}
		id, _ := libp2ppeer.IDFromBytes(ad.Peer)
		own[id] = true
	}
	// Full: another relayer takes mallory's places, up to half of them,
	// never a first-hand one.
	got := relay(honest, maxRelayedPerPeer)
	if got != maxRelayedPerPeer/2 || len(d.relayed[mallory]) != maxRelayedPerPeer/2 {
		t.Fatalf("the second relayer got %d in, the first kept %d; want %d each", got, len(d.relayed[mallory]), maxRelayedPerPeer/2)
	}
	for id := range own {
		if _, ok := d.peers[id]; !ok {
			t.Fatalf("a first-hand entry %v was displaced by a relayed one", id)
		}
	}
	// A first-hand copy clears the charge.
	var some libp2ppeer.ID
	for id := range d.relayed[honest] {
		some = id
		break
	}
	newer := *d.peers[some].ad
	newer.Seq++
	if ok, _ := d.store(&newer, []byte("own now"), time.Minute, false, some); !ok {
		t.Fatal("a first-hand newer copy refused")
	}
	if _, charged := d.relayed[honest][some]; charged || d.peers[some].via != "" {
		t.Fatal("a first-hand copy left its entry charged to its relayer")
	}
	if len(d.relayed[honest]) != maxRelayedPerPeer/2-1 {
		t.Fatalf("the relayer holds %d, want %d", len(d.relayed[honest]), maxRelayedPerPeer/2-1)
	}
}
