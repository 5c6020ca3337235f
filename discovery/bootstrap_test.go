package discovery

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// A peer whose bootstrap peer is unreachable when it starts dials it
// again until it joins, and joins again after losing it: without the
// retries it stayed alone until kad-dht's own repair, a minute later (the
// tail of BenchmarkScale100, where a bootstrap busy with a hundred
// handshakes let some dials time out).
func TestBootstrapRetriedUntilJoined(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	bootID, err := libp2ppeer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeTCPAddr(t)
	dials := make(chan error, 64)
	a := testhost.NewHost(t)
	connect := func(ctx context.Context, ai libp2ppeer.AddrInfo) error {
		err := a.Connect(ctx, ai)
		select {
		case dials <- err:
		default:
		}
		return err
	}
	d, err := StartDHT(a, connect, WithMesh("boot"), WithLogger(testutil.QuietLogger()),
		WithBootstrap(libp2ppeer.AddrInfo{ID: bootID, Addrs: []ma.Multiaddr{addr}}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(context.Background()) }()
	wantDial := func(ok bool) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case err := <-dials:
				if (err == nil) == ok {
					return
				}
			case <-deadline:
				t.Fatalf("no dial of the bootstrap peer that %s within 20 s", map[bool]string{true: "succeeded", false: "failed"}[ok])
			}
		}
	}
	wantDial(false) // nobody listens there yet
	boot, bootDHT := startBootstrap(t, key, addr)
	wantDial(true)
	waitJoined(t, d)
	// The bootstrap peer restarts: a's routing table loses it, and a
	// joins again once it is back.
	_ = bootDHT.Close(context.Background())
	_ = boot.Close()
	wantDial(false)
	boot, bootDHT = startBootstrap(t, key, addr)
	defer func() { _ = bootDHT.Close(context.Background()); _ = boot.Close() }()
	wantDial(true)
	waitJoined(t, d)
	if n := d.bootDials.Load(); n < 4 {
		t.Fatalf("%d dials of the bootstrap peer, want at least 4", n)
	}
}

// startBootstrap starts a DHT peer with key, listening on addr.
func startBootstrap(t *testing.T, key crypto.PrivKey, addr ma.Multiaddr) (host.Host, *DHT) {
	t.Helper()
	h, err := libp2p.New(libp2p.Identity(key), libp2p.ListenAddrs(addr), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	d, err := StartDHT(h, func(ctx context.Context, ai libp2ppeer.AddrInfo) error { return h.Connect(ctx, ai) },
		WithMesh("boot"), WithLogger(testutil.QuietLogger()))
	if err != nil {
		_ = h.Close()
		t.Fatal(err)
	}
	return h, d
}

// waitJoined waits for d to be joined, 10 s at most.
func waitJoined(t *testing.T, d *DHT) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, "joined after the bootstrap peer answered", d.joined)
}

// freeTCPAddr returns a loopback TCP address free a moment ago.
func freeTCPAddr(t *testing.T) ma.Multiaddr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port))
}
