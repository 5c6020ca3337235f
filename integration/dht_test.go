package integration

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/peer"
)

// Twenty peers on 127.0.0.1, each given only the first one as bootstrap
// peer, all find each other through the DHT rendezvous.
func TestDHTFindsAllPeersFromOneBootstrap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts 20 peers")
	}
	const n = 20
	// Lookups back off 0.5, 1, 2, 4, 8, 16 s by default: a peer not found
	// by the lookup at 15.5 s waits for the one at 31.5 s, past the 30 s
	// bound below. Capped at 2 s, a slow machine only costs a few rounds.
	every := peer.WithDHTFindEvery(2 * time.Second)
	first := newNode(t, peer.WithMesh("dhttest"), peer.WithDHT(), every)
	nodes := []*peer.Node{first}
	for range n - 1 {
		nodes = append(nodes, newNode(t, peer.WithMesh("dhttest"), peer.WithDHT(*first.AddrInfo()), every))
	}
	start := time.Now()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := 0
		for _, a := range nodes {
			for _, b := range nodes {
				if a != b && a.Host().Network().Connectedness(b.ID()) != network.Connected {
					missing++
				}
			}
		}
		if missing == 0 {
			t.Logf("%d peers connected to each other %v after the last one started", n, time.Since(start))
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("after 30 s, %d of %d peer pairs still unconnected", missing, n*(n-1))
		}
	}
	// The mesh carries actor messages between peers that only met via the DHT.
	echoRef := spawn(t, nodes[n-1], "echo", echo)
	ctx, cancel := askCtx()
	defer cancel()
	if v, err := nodes[1].System().Ask(ctx, echoRef, Ping{5}); err != nil || v != (Pong{5}) {
		t.Fatalf("ask across DHT-found peers: %v %v", v, err)
	}
}
