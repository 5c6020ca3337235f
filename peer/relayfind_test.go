package peer

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"

	"github.com/libp2p/go-libp2p"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/autonatv2"
)

// TestRelayCandidates: static relays, when there are any, are the only
// candidates; else the found ones, all of them in some order, at most num.
func TestRelayCandidates(t *testing.T) {
	ai := func() libp2ppeer.AddrInfo { return libp2ppeer.AddrInfo{ID: testhost.NewPeerID(t)} }
	static := []libp2ppeer.AddrInfo{ai(), ai()}
	found := []libp2ppeer.AddrInfo{ai(), ai(), ai()}
	if got := relayCandidates(static, found, 20); len(got) != 2 || got[0].ID != static[0].ID || got[1].ID != static[1].ID {
		t.Fatalf("with static relays: %v; want them only", got)
	}
	got := relayCandidates(nil, found, 20)
	ids := map[libp2ppeer.ID]bool{}
	for _, a := range got {
		ids[a.ID] = true
	}
	if len(got) != 3 || len(ids) != 3 {
		t.Fatalf("found relays: %v; want the three", got)
	}
	if got := relayCandidates(nil, found, 1); len(got) != 1 {
		t.Fatalf("one asked for: %v", got)
	}
	if got := relayCandidates(nil, found, 0); len(got) != 0 {
		t.Fatalf("none asked for: %v", got)
	}
}

// TestRelayFoundInAdvertisements: a private node with relay discovery and
// no static relay reserves a slot on the relay of its mesh it is connected
// to; a peer that advertises Relay but runs no relay service (it is not
// public) is no candidate.
func TestRelayFoundInAdvertisements(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	relay := newTestNode(t, WithGroups(true), WithRelayService(true), withHostOptions(libp2p.ForceReachabilityPublic()))
	claimer := newTestNode(t, WithGroups(true), WithRelayService(true), withHostOptions(libp2p.ForceReachabilityPrivate()))
	hidden := newTestNode(t, WithGroups(true), WithRelayDiscovery(true), withHostOptions(libp2p.ForceReachabilityPrivate()))
	for _, n := range []*Node{relay, claimer} {
		if err := hidden.Connect(ctx, *n.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	src := &relaySource{find: true}
	h := hidden.Host()
	src.h.Store(&h)
	src.dir.Store(hidden.dir)
	// Both advertisements held, identify done: only the relay is found
	// (no event tells of a stored advertisement).
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		found := src.found()
		if len(found) == 1 && found[0].ID == relay.ID() && hidden.dir.Ad(claimer.ID()) != nil {
			return nil
		}
		err := fmt.Errorf("found %v; want the relay only (claimer advertised: %v)", found, hidden.dir.Ad(claimer.ID()) != nil)
		if len(found) > 1 {
			t.Fatal(err)
		}
		return err
	})
	// AutoRelay protects its connection to a relay it holds a
	// reservation on; nothing else tells of it on loopback.
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		if !hidden.Host().ConnManager().IsProtected(relay.ID(), "autorelay") {
			return fmt.Errorf("no reservation on the advertised relay; the relay's ad was seen: %v", len(hidden.Directory().Peers()) > 0)
		}
		return nil
	})
}

// TestRelayDiscoveryTurnsOnAutoNATv2: a node that looks for relays (the
// daemon's default) runs AutoNAT v2, as one with static relays or a relay
// service does; a LAN-only node does not. libp2p's v2 has no client-only
// mode: the node answers dial requests too.
func TestRelayDiscoveryTurnsOnAutoNATv2(t *testing.T) {
	speaksV2 := func(n *Node) bool { return slices.Contains(n.Host().Mux().Protocols(), autonatv2.DialProtocol) }
	if n := newTestNode(t, WithGroups(true)); speaksV2(n) {
		t.Fatal("a LAN-only node runs AutoNAT v2")
	}
	for name, o := range map[string]Option{
		"find_relays":   WithRelayDiscovery(true),
		"relays":        WithRelays(libp2ppeer.AddrInfo{ID: testhost.NewPeerID(t)}),
		"relay_service": WithRelayService(true),
	} {
		if n := newTestNode(t, WithGroups(true), o); !speaksV2(n) {
			t.Errorf("with %s: no AutoNAT v2", name)
		}
	}
}
