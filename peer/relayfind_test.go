package peer

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil/testhost"

	"github.com/libp2p/go-libp2p"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/discovery"
)

// TestRelayCandidates: static relays come first; an advertisement counts
// only when it says Relay, once per peer, with its direct addresses
// (relayed and malformed ones dropped); no more than asked for.
func TestRelayCandidates(t *testing.T) {
	ids := make([]libp2ppeer.ID, 4)
	for i := range ids {
		ids[i] = testhost.NewPeerID(t)
	}
	addr := ma.StringCast("/ip4/11.0.0.1/tcp/4001")
	static := []libp2ppeer.AddrInfo{{ID: ids[0], Addrs: []ma.Multiaddr{addr}}}
	ads := []*discovery.Advertisement{
		{Peer: []byte(ids[1]), Relay: true, Addrs: []string{"/ip4/11.0.0.2/tcp/4001", "not an address", "/ip4/11.0.0.1/tcp/4001/p2p/" + ids[0].String() + "/p2p-circuit"}},
		{Peer: []byte(ids[2]), Addrs: []string{"/ip4/11.0.0.3/tcp/4001"}},                                                      // not a relay
		{Peer: []byte(ids[0]), Relay: true, Addrs: []string{"/ip4/11.0.0.9/tcp/4001"}},                                         // the static one again
		{Peer: []byte(ids[3]), Relay: true, Addrs: []string{"/ip4/11.0.0.1/tcp/4001/p2p/" + ids[0].String() + "/p2p-circuit"}}, // relayed only
		{Peer: []byte("not a peer ID"), Relay: true, Addrs: []string{"/ip4/11.0.0.4/tcp/4001"}},
	}
	got := relayCandidates(static, ads, 10)
	if len(got) != 2 || got[0].ID != ids[0] || got[1].ID != ids[1] {
		t.Fatalf("candidates %v; want the static relay, then the advertised one", got)
	}
	if len(got[1].Addrs) != 1 || got[1].Addrs[0].String() != "/ip4/11.0.0.2/tcp/4001" {
		t.Fatalf("advertised relay's addresses %v; want its direct one only", got[1].Addrs)
	}
	if got := relayCandidates(static, ads, 1); len(got) != 1 || got[0].ID != ids[0] {
		t.Fatalf("one asked for: %v", got)
	}
}

// TestRelayFoundInAdvertisements: a private node with relay discovery and
// no static relay reserves a slot on the relay whose advertisement it
// got from the mesh.
func TestRelayFoundInAdvertisements(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	relay := newTestNode(t, WithGroups(true), WithRelayService(true), withHostOptions(libp2p.ForceReachabilityPublic()))
	hidden := newTestNode(t, WithGroups(true), WithRelayDiscovery(true), withHostOptions(libp2p.ForceReachabilityPrivate()))
	if err := hidden.Connect(ctx, *relay.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	// AutoRelay protects its connection to a relay it holds a
	// reservation on; nothing else tells of it on loopback.
	for !hidden.Host().ConnManager().IsProtected(relay.ID(), "autorelay") {
		select {
		case <-ctx.Done():
			t.Fatalf("no reservation on the advertised relay; the relay's ad was seen: %v", len(hidden.Directory().Peers()) > 0)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
