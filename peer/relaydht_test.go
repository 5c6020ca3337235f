package peer

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
)

// TestRelayFoundInTheDHT: a private node with relay discovery, no static
// relay and a dial budget that the DHT's bootstrap peer fills (so the
// rendezvous connects it to no one else) is connected to no relay (a DHT
// client with a full budget too: neither the DHT's own traffic nor the
// relay's rendezvous connects them); it
// finds the mesh's relay under the DHT's relay key, and AutoRelay dials
// it and reserves a slot there.
func TestRelayFoundInTheDHT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boot := newTestNode(t, WithGroups(true), WithDHT())
	// A DHT client (not in the routing tables, so the DHT's own traffic
	// does not connect the hidden node to it) with a full dial budget too
	// (its rendezvous would dial the hidden node).
	relay := newTestNode(t, WithGroups(true), WithRelayService(true), WithDHT(*boot.AddrInfo()), WithDHTClient(true),
		WithConnections(Connections{Low: 1, High: 8}), withHostOptions(libp2p.ForceReachabilityPublic()))
	for relay.dht.RelaysProvided() == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the relay never provided its relay record (reachability %v)", relay.Reachability())
		}
		time.Sleep(20 * time.Millisecond) // nothing tells of a record provided
	}
	hidden := newTestNode(t, WithGroups(true), WithRelayDiscovery(true), WithDHT(*boot.AddrInfo()),
		WithConnections(Connections{Low: 1, High: 8}), withHostOptions(libp2p.ForceReachabilityPrivate()))
	for !hidden.Host().ConnManager().IsProtected(relay.ID(), "autorelay") {
		select {
		case <-ctx.Done():
			t.Fatalf("no reservation on the relay: %d candidates from the DHT, connected %v",
				hidden.relays.fromDHT.Load(), hidden.Host().Network().Connectedness(relay.ID()) == network.Connected)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if hidden.relays.fromDHT.Load() == 0 {
		t.Fatal("a reservation on the relay, but the DHT gave no candidate: found another way")
	}
	if st := relay.RelayStats(); st.Reservations < 1 {
		t.Fatalf("relay stats %+v: want the hidden node's reservation", st)
	}
}
