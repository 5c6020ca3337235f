package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
)

// TestTwoHonestFloodsDoNotDeadlock: two peers, each asking the other's
// echo from many goroutines at once over short link queues (so that the
// links both ways stay full), both keep being answered throughout, and
// each can still ask the other once the floods stop. This is the case a
// pause of a peer that does not read its replies must never turn into
// a deadlock (docs/trust.md, "Fairness at a shared actor").
func TestTwoHonestFloodsDoNotDeadlock(t *testing.T) {
	const askers, window, windows = 16, 250 * time.Millisecond, 8
	a, b := newNode(t, peer.WithLinkQueue(64)), newNode(t, peer.WithLinkQueue(64))
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	refs := map[*peer.Node]actor.Ref{a: spawn(t, a, "echo", echo), b: spawn(t, b, "echo", echo)}
	other := map[*peer.Node]*peer.Node{a: b, b: a}
	var answered [2]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range []*peer.Node{a, b} {
		for range askers {
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					actx, acancel := context.WithTimeout(context.Background(), 2*time.Second)
					if _, err := n.System().Ask(actx, refs[other[n]], Ping{k}); err == nil {
						answered[i].Add(1)
					}
					acancel()
				}
			})
		}
	}
	var last [2]int64
	for w := range windows {
		time.Sleep(window) // a measurement window: progress has no single event
		for i := range answered {
			now := answered[i].Load()
			if now == last[i] {
				close(stop)
				wg.Wait()
				t.Fatalf("window %d: peer %d got no answer in %v (%d before): the floods stalled", w, i, window, now)
			}
			last[i] = now
		}
	}
	close(stop)
	wg.Wait()
	for _, n := range []*peer.Node{a, b} {
		actx, acancel := askCtx()
		if _, err := n.System().Ask(actx, refs[other[n]], Ping{-1}); err != nil {
			t.Fatalf("an ask after the floods: %v", err)
		}
		acancel()
	}
	t.Logf("answered %d and %d asks in %v", last[0], last[1], window*windows)
}
