package discovery

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestDHTLooksUpOnlyWhileItWantsPeers: a node whose dial budget is full
// does not look the rendezvous up (the answer grows with the mesh); once
// it wants peers again, it does, and finds the other peer there.
func TestDHTLooksUpOnlyWhileItWantsPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dialer := func(h host.Host) func(context.Context, libp2ppeer.AddrInfo) error {
		return func(ctx context.Context, ai libp2ppeer.AddrInfo) error { return h.Connect(ctx, ai) }
	}
	boot := testhost.NewHost(t)
	bootInfo := libp2ppeer.AddrInfo{ID: boot.ID(), Addrs: boot.Addrs()}
	const every = 50 * time.Millisecond
	bd, err := StartDHT(boot, dialer(boot), WithMesh("m"), WithFindEvery(every))
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close(ctx)
	var wants atomic.Bool
	var asked atomic.Int64 // rounds of the find loop
	h := testhost.NewHost(t)
	d, err := StartDHT(h, dialer(h), WithMesh("m"), WithBootstrap(bootInfo), WithFindEvery(every),
		WithWantsPeers(func() bool { asked.Add(1); return wants.Load() }))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	// Several rounds of the find loop, and no lookup.
	testutil.EventuallyNil(t, 10*time.Second, func() error {
		if n := asked.Load(); n < 5 {
			return fmt.Errorf("the find loop asked %d times, want 5", n)
		}
		return nil
	})
	if n := d.lookups.Load(); n != 0 {
		t.Fatalf("%d rendezvous lookups while the dial budget was full", n)
	}
	wants.Store(true)
	testutil.Eventually(t, 10*time.Second, "a lookup by each node once the node wanted peers", func() bool {
		return d.lookups.Load() > 0 && bd.lookups.Load() > 0
	})
}
