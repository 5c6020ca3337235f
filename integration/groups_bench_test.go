package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/peer"
)

// BenchmarkGroupBroadcast: three peers in a chain on 127.0.0.1 (GossipSub
// forwards along it: one hop to the middle peer, two to the last), one
// member of a group on each. An op is one broadcast from the first peer's
// plain code (Node.Publish), done when every member got it; at most window broadcasts are on their way at once (window=1:
// the latency of a broadcast reaching the whole group; window=64: its
// throughput). A broadcast that never arrives fails the run after 10 s.
func BenchmarkGroupBroadcast(b *testing.B) {
	for _, window := range []int{1, 64} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) { benchGroupBroadcast(b, window) })
	}
}

func benchGroupBroadcast(b *testing.B, window int) {
	nodes := make([]*peer.Node, 3)
	for i := range nodes {
		nodes[i] = newNode(b, peer.WithMesh("groupbench"), peer.WithGroups(true))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i < len(nodes); i++ {
		if err := nodes[i].Connect(ctx, *nodes[i-1].AddrInfo()); err != nil {
			b.Fatal(err)
		}
	}
	got := make(chan int, 1024) // a member's index, per broadcast it got
	joined := make(chan struct{}, len(nodes))
	for i, n := range nodes {
		spawn(b, n, "m", func(c *actor.Context) {
			if err := group.Join(c, "room"); err != nil {
				b.Error(err)
			}
			joined <- struct{}{}
			var h actor.Case
			h = actor.On(func(Ping) { got <- i; c.Receive(h) })
			c.Receive(h)
		})
	}
	for range nodes {
		recv(b, joined)
	}
	for i, n := range nodes {
		if err := n.GroupReady(ctx, "room", min(i+1, 2, len(nodes)-i)); err != nil {
			b.Fatal(err)
		}
	}
	// The mesh is formed; a first broadcast that reaches every member
	// shows the subscriptions are known along the chain.
	counts := make([]int, len(nodes))
	publishAll := func(total int) {
		sent := 0
		for slices.Min(counts) < total {
			for sent < total && sent-slices.Min(counts) < window {
				if err := nodes[0].Publish("room", Ping{N: sent}); err != nil {
					b.Fatal(err)
				}
				sent++
			}
			select {
			case i := <-got:
				counts[i]++
			case <-time.After(10 * time.Second):
				b.Fatalf("broadcasts stalled: %d sent, members got %v", sent, counts)
			}
		}
	}
	publishAll(1)
	clear(counts)
	b.ResetTimer()
	publishAll(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "broadcasts/s")
}
