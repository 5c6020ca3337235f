package discovery

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestRelaysFoundInTheDHT: a relay provides itself under the mesh's relay
// key only while it says it relays, and a peer of the mesh finds it there
// by a lookup, with its addresses; a peer of another mesh does not.
func TestRelaysFoundInTheDHT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(h host.Host, mesh string, opts ...Option) *DHT {
		t.Helper()
		none := func(context.Context, libp2ppeer.AddrInfo) error { return nil } // the rendezvous connects no one
		d, err := StartDHT(h, none, append([]Option{WithMesh(mesh), WithWantsPeers(func() bool { return false })}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(context.Background()) })
		return d
	}
	boot := testhost.NewHost(t)
	bootInfo := libp2ppeer.AddrInfo{ID: boot.ID(), Addrs: boot.Addrs()}
	start(boot, "m")
	var relays atomic.Bool
	var asked atomic.Int64 // rounds of the provider loop
	rh := testhost.NewHost(t)
	r := start(rh, "m", WithBootstrap(bootInfo), WithRelayProvider(func() bool { asked.Add(1); return relays.Load() }))
	f := start(testhost.NewHost(t), "m", WithBootstrap(bootInfo))
	other := start(testhost.NewHost(t), "other", WithBootstrap(bootInfo))
	look := func(d *DHT) []libp2ppeer.AddrInfo {
		lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
		defer lcancel()
		found, _ := d.FindRelays(lctx)
		return found
	}
	// Rounds of the provider loop that must not provide; no event tells of them.
	testutil.Eventually(t, 20*time.Second, "the provider loop asks twice", func() bool { return asked.Load() >= 2 })
	if r.RelaysProvided() != 0 {
		t.Fatal("provided the relay key while not relaying")
	}
	if found := look(f); len(found) != 0 {
		t.Fatalf("found relays %v before any provided", found)
	}
	relays.Store(true)
	testutil.Eventually(t, 20*time.Second, "the relay provides its record", func() bool { return r.RelaysProvided() > 0 })
	found := look(f)
	if len(found) != 1 || found[0].ID != rh.ID() || len(found[0].Addrs) == 0 {
		t.Fatalf("found %v; want the relay with its addresses", found)
	}
	if found := look(other); len(found) != 0 {
		t.Fatalf("a peer of another mesh found %v", found)
	}
}
