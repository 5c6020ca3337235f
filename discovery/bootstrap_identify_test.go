package discovery

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// A peer connected to its bootstrap peer by a connection identify failed
// on (it times out at a bootstrap busy with a hundred handshakes) knows
// none of its protocols, so kad-dht never puts it in the routing table:
// the peer closes that connection and dials again, where it used to stay
// connected and alone for good (a BenchmarkScale100 failure: one peer
// with no advertisements after 4 minutes, one connection, no protocols
// known). Here the bootstrap answers no identify at all: the peer
// reconnects, again and again, instead of holding its first connection.
func TestBootstrapReconnectsWhereIdentifyFailed(t *testing.T) {
	old := unidentifiedAfter
	unidentifiedAfter = 300 * time.Millisecond
	t.Cleanup(func() { unidentifiedAfter = old })
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	boot, bootDHT := startBootstrap(t, key, freeTCPAddr(t))
	defer func() { _ = bootDHT.Close(context.Background()); _ = boot.Close() }()
	boot.RemoveStreamHandler(identify.ID)
	conns := make(chan struct{}, 64)
	boot.Network().Notify(&network.NotifyBundle{ConnectedF: func(network.Network, network.Conn) {
		select {
		case conns <- struct{}{}:
		default:
		}
	}})
	a := testhost.NewHost(t)
	d, err := StartDHT(a, a.Connect, WithMesh("boot"), WithLogger(testutil.QuietLogger()),
		WithBootstrap(libp2ppeer.AddrInfo{ID: boot.ID(), Addrs: boot.Addrs()}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(context.Background()) }()
	deadline := time.After(15 * time.Second)
	for seen := 0; seen < 3; seen++ {
		select {
		case <-conns:
		case <-deadline:
			t.Fatalf("%d connections from the peer in 15 s, want 3: it held the one identify failed on", seen)
		}
	}
	if d.joined() {
		t.Fatal("joined through a bootstrap peer that never identified")
	}
}
