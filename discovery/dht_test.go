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
// provider: one peer cannot fill a server's store with names, and one at
// its bound that provides a new name replaces its own record written
// least lately (stale records of names it no longer hosts), never
// another's; a record provided again is fresh.
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
	greedy, honest := testhost.NewPeerID(t), testhost.NewPeerID(t)
	key := func(i int) []byte {
		k, err := NameKey("mesh", fmt.Sprint("name", i))
		if err != nil {
			t.Fatal(err)
		}
		return k.Hash()
	}
	// provide runs one provider manager over the store (so that each
	// phase is flushed in full when it closes).
	provide := func(f func(pm *records.ProviderManager)) {
		pm, err := records.NewProviderManager(testhost.NewPeerID(t), ps, store)
		if err != nil {
			t.Fatal(err)
		}
		f(pm)
		if err := pm.Close(); err != nil {
			t.Fatal(err)
		}
	}
	add := func(pm *records.ProviderManager, k []byte, p libp2ppeer.ID) {
		if err := pm.AddProvider(ctx, k, libp2ppeer.AddrInfo{ID: p}); err != nil {
			t.Fatal(err)
		}
	}
	provide(func(pm *records.ProviderManager) { // greedy reaches its bound
		for i := range maxNamesPerPeer {
			add(pm, key(i), greedy)
		}
	})
	provide(func(pm *records.ProviderManager) { // name0 again, then 50 more
		add(pm, key(0), greedy)
		for i := maxNamesPerPeer; i < maxNamesPerPeer+50; i++ {
			add(pm, key(i), greedy)
		}
		svc, _ := NameKey("mesh", "svc")
		add(pm, svc.Hash(), honest)
	})
	if len(store.perPeer) != 2 || store.names != maxNamesPerPeer+1 {
		t.Fatalf("%d providers, %d name records; want 2 and %d (the bound and the honest one)",
			len(store.perPeer), store.names, maxNamesPerPeer+1)
	}
	pm, err := records.NewProviderManager(testhost.NewPeerID(t), ps, store)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	provides := func(k []byte, p libp2ppeer.ID) bool {
		got, err := pm.GetProviders(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(got, func(ai libp2ppeer.AddrInfo) bool { return ai.ID == p })
	}
	svc, _ := NameKey("mesh", "svc")
	switch {
	case !provides(svc.Hash(), honest):
		t.Fatal("the honest provider's record is gone")
	case !provides(key(0), greedy):
		t.Fatal("a record provided again was replaced")
	case !provides(key(maxNamesPerPeer+49), greedy):
		t.Fatal("the newest record is missing")
	}
	for i := 1; i <= 50; i++ { // the 50 written least lately
		if provides(key(i), greedy) {
			t.Fatalf("name%d, among the oldest, is still provided", i)
		}
	}
}
