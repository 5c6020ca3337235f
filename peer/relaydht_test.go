package peer

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// TestRelayFoundInTheDHT: a private node with relay discovery, no static
// relay and a dial budget that the DHT's bootstrap peer fills (so the
// rendezvous connects it to no one else) is connected to no relay (a DHT
// client with a full budget too: neither the DHT's own traffic nor the
// relay's rendezvous connects them); it
// finds the mesh's relay under the DHT's relay key, and AutoRelay dials
// it and reserves a slot there.
func TestRelayFoundInTheDHT(t *testing.T) {
	boot := newTestNode(t, WithGroups(true), WithDHT())
	// A DHT client (not in the routing tables, so the DHT's own traffic
	// does not connect the hidden node to it) with a full dial budget too
	// (its rendezvous would dial the hidden node).
	relay := newTestNode(t, WithGroups(true), WithRelayService(true), WithDHT(*boot.AddrInfo()), WithDHTClient(true),
		WithConnections(Connections{Low: 1, High: 8}), withHostOptions(libp2p.ForceReachabilityPublic()))
	testutil.EventuallyNil(t, 30*time.Second, func() error { // nothing tells of a record provided
		if relay.dht.RelaysProvided() == 0 {
			return fmt.Errorf("the relay never provided its relay record (reachability %v)", relay.Reachability())
		}
		return nil
	})
	// The hidden node is a DHT client too, as a private laptop is: else the
	// relay's own walks (its refreshes) query it as a server and connect
	// them, and it finds the relay among its connected peers.
	hidden := newTestNode(t, WithGroups(true), WithRelayDiscovery(true), WithDHT(*boot.AddrInfo()), WithDHTClient(true),
		WithConnections(Connections{Low: 1, High: 8}), withHostOptions(libp2p.ForceReachabilityPrivate()))
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		if !hidden.Host().ConnManager().IsProtected(relay.ID(), "autorelay") {
			return fmt.Errorf("no reservation on the relay: %d candidates from the DHT, connected %v",
				hidden.relays.fromDHT.Load(), hidden.Host().Network().Connectedness(relay.ID()) == network.Connected)
		}
		return nil
	})
	if hidden.relays.fromDHT.Load() == 0 {
		t.Fatal("a reservation on the relay, but the DHT gave no candidate: found another way")
	}
	if st := relay.RelayStats(); st.Reservations < 1 {
		t.Fatalf("relay stats %+v: want the hidden node's reservation", st)
	}
}

// TestRelayLookupBackoff: lookups of the relay key that find nothing are
// spaced 3 s, then 6 s, 12 s … up to 5 minutes; one that finds a relay
// brings the wait back to 3 s.
func TestRelayLookupBackoff(t *testing.T) {
	var b lookupBackoff
	now := time.Unix(1000, 0)
	var gaps []time.Duration
	last := now
	for i := 0; i < 12; i++ {
		for !b.start(now) {
			now = now.Add(100 * time.Millisecond)
		}
		if i > 0 {
			gaps = append(gaps, now.Sub(last))
		}
		last = now
		b.done(0)
	}
	want := relayLookupEvery
	for i, g := range gaps {
		if g != want {
			t.Fatalf("gap %d after lookups that found nothing: %v; want %v (gaps %v)", i, g, want, gaps)
		}
		want = min(2*want, relayLookupMax)
	}
	if gaps[len(gaps)-1] != relayLookupMax {
		t.Fatalf("last gap %v; want the cap %v", gaps[len(gaps)-1], relayLookupMax)
	}
	b.done(1) // the lookup under way found one: the next after it comes 3 s after its own start
	now = now.Add(relayLookupMax)
	if !b.start(now) || b.start(now.Add(relayLookupEvery-time.Millisecond)) || !b.start(now.Add(relayLookupEvery)) {
		t.Fatal("after a lookup that found a relay, the next is not 3 s later")
	}
}
