package discovery

import (
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// An advertisement kept puts its peer's signed addresses into the
// peerstore, so that a send to a peer known only from its advertisement
// can dial it (at 100 peers, most failed first asks were "no addresses"
// before this); one not kept (older than what is held) adds nothing, and
// text that is not a multiaddr is skipped.
func TestStoredAdvertisementTeachesAddresses(t *testing.T) {
	h := testhost.NewHost(t)
	d := &Directory{h: h, cfg: adsConfig{TTL: 90 * time.Second}, peers: make(map[libp2ppeer.ID]adEntry),
		gone: make(map[libp2ppeer.ID]goneEntry), pullNow: make(chan struct{}, 1)}
	p := testhost.NewPeerID(t)
	ad := func(seq uint64, addrs ...string) *Advertisement {
		return &Advertisement{Peer: []byte(p), Incarnation: 1, Seq: seq, TTLSeconds: 90, Addrs: addrs}
	}
	if got := h.Peerstore().Addrs(p); len(got) != 0 {
		t.Fatalf("addresses before any advertisement: %v", got)
	}
	if ok, _ := d.store(ad(2, "/ip4/127.0.0.1/tcp/4001", "not an address", "/ip4/127.0.0.1/udp/4001/quic-v1"), []byte("2"), time.Minute, true, ""); !ok {
		t.Fatal("advertisement not stored")
	}
	if got := h.Peerstore().Addrs(p); len(got) != 2 {
		t.Fatalf("peerstore holds %v, want the advertisement's 2 addresses", got)
	}
	if ok, _ := d.store(ad(1, "/ip4/127.0.0.1/tcp/4999"), []byte("1"), time.Minute, true, ""); ok {
		t.Fatal("an older advertisement was stored")
	}
	for _, a := range h.Peerstore().Addrs(p) {
		if a.String() == "/ip4/127.0.0.1/tcp/4999" {
			t.Fatalf("an advertisement not kept taught its address %v", a)
		}
	}
}
