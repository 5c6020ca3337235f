package discovery

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p-kad-dht/records"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/peerstore/pstoremem"
	mh "github.com/multiformats/go-multihash"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// The DHT's provider store keeps records of the mesh's rendezvous up to
// maxProviders, whatever other keys peers provide; records refused in a
// batch cost the others nothing.
func TestProvidersOfTheRendezvousBounded(t *testing.T) {
	ctx := context.Background()
	store, err := newMeshProviders("/troupe/mesh")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := pstoremem.NewPeerstore()
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	newID := func() libp2ppeer.ID { return testhost.NewPeerID(t) }
	pm, err := records.NewProviderManager(newID(), ps, store)
	if err != nil {
		t.Fatal(err)
	}
	// The keys a RoutingDiscovery provides for a namespace.
	key := func(ns string) []byte {
		h, err := mh.Sum([]byte(ns), mh.SHA2_256, -1)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	rendezvous, other := key("/troupe/mesh"), key("/troupe/other")
	var kept []libp2ppeer.ID
	for i := 0; len(kept) < maxProviders+100; i++ {
		p, k := newID(), rendezvous
		if i%3 == 0 {
			k = other // mixed into the same batches
		} else {
			kept = append(kept, p)
		}
		if err := pm.AddProvider(ctx, k, libp2ppeer.AddrInfo{ID: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pm.Close(); err != nil { // flushes what is pending
		t.Fatal(err)
	}
	if store.n != maxProviders {
		t.Fatalf("%d records stored, want the bound, %d", store.n, maxProviders)
	}
	pm2, err := records.NewProviderManager(newID(), ps, store)
	if err != nil {
		t.Fatal(err)
	}
	defer pm2.Close()
	got, err := pm2.GetProviders(ctx, rendezvous)
	if err != nil || len(got) != maxProviders {
		t.Fatalf("%d providers of the rendezvous (%v), want %d", len(got), err, maxProviders)
	}
	for _, ai := range got {
		if !slices.Contains(kept, ai.ID) {
			t.Fatalf("%v is no provider of the rendezvous", ai.ID)
		}
	}
	// Another key is a name's: its records have a bound of their own.
	if others, _ := pm2.GetProviders(ctx, other); len(others) == 0 || store.names != len(others) {
		t.Fatalf("%d providers of another key kept, %d counted", len(others), store.names)
	}
}

// Name records (keys other than the rendezvous) are bounded per
// provider: one peer cannot fill a server's store with names.
func TestNameRecordsBoundedPerProvider(t *testing.T) {
	ctx := context.Background()
	store, err := newMeshProviders("/troupe/mesh")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := pstoremem.NewPeerstore()
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	pm, err := records.NewProviderManager(testhost.NewPeerID(t), ps, store)
	if err != nil {
		t.Fatal(err)
	}
	greedy, honest := testhost.NewPeerID(t), testhost.NewPeerID(t)
	greedyKey := func(m *meshProviders) string { // the provider with the most records
		best := ""
		for p, n := range m.perPeer {
			if best == "" || n > m.perPeer[best] {
				best = p
			}
		}
		return best
	}
	for i := range maxNamesPerPeer + 50 {
		key, err := NameKey("mesh", fmt.Sprint("name", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := pm.AddProvider(ctx, key.Hash(), libp2ppeer.AddrInfo{ID: greedy}); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := NameKey("mesh", "svc")
	if err := pm.AddProvider(ctx, key.Hash(), libp2ppeer.AddrInfo{ID: honest}); err != nil {
		t.Fatal(err)
	}
	if err := pm.Close(); err != nil {
		t.Fatal(err)
	}
	if len(store.perPeer) != 2 || max(store.perPeer[greedyKey(store)], 0) != maxNamesPerPeer {
		t.Fatalf("records per provider %v, want %d of the greedy one and 1", store.perPeer, maxNamesPerPeer)
	}
	if store.names != maxNamesPerPeer+1 {
		t.Fatalf("%d name records, want %d (the bound and the honest one)", store.names, maxNamesPerPeer+1)
	}
}
