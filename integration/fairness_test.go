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

// TestTwoHonestFloodsDoNotDeadlock: two peers each send the other's echo
// Pings as fast as they can over short link queues (so that the links
// both ways stay full) and ask it from many goroutines at once. Each
// echo keeps handling messages in every window (no deadlock), and once
// the floods stop each peer's ask is answered. This is the case a pause
// of a peer that does not read its replies must never turn into a
// deadlock (docs/trust.md, "starve other peers at a shared actor"). The
// asks answered during the floods are a figure, not a bound: today they
// starve (issue 34 item 3).
func TestTwoHonestFloodsDoNotDeadlock(t *testing.T) {
	const askers, window, windows = 8, 500 * time.Millisecond, 6
	a, b := newNode(t, peer.WithLinkQueue(64)), newNode(t, peer.WithLinkQueue(64))
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	var handled [2]atomic.Int64 // by a's echo, by b's
	countingEcho := func(k *atomic.Int64) actor.Behavior {
		return func(c *actor.Context) {
			var h actor.Case
			h = actor.On(func(p Ping) { k.Add(1); c.Reply(Pong(p)); c.Receive(h) })
			c.Receive(h)
		}
	}
	refs := map[*peer.Node]actor.Ref{a: spawn(t, a, "echo", countingEcho(&handled[0])), b: spawn(t, b, "echo", countingEcho(&handled[1]))}
	other := map[*peer.Node]*peer.Node{a: b, b: a}
	var answered [2]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range []*peer.Node{a, b} {
		wg.Go(func() { // the one-way flood that keeps the link full
			for k := 0; ; k++ {
				if k%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
				n.System().Send(refs[other[n]], Ping{k})
			}
		})
		for range askers {
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					actx, acancel := context.WithTimeout(context.Background(), time.Second)
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
		for i := range handled {
			now := handled[i].Load()
			if now == last[i] {
				close(stop)
				wg.Wait()
				t.Fatalf("window %d: echo %d handled nothing in %v (%d before): the floods deadlocked", w, i, window, now)
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
	t.Logf("in %v the echoes handled %d and %d messages; asks answered during the floods: %d and %d",
		window*windows, last[0], last[1], answered[0].Load(), answered[1].Load())
}
