package integration

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

// TestTwoHonestFloodsDoNotDeadlock: two peers each send the other's echo
// Pings as fast as they can over short link queues (so that the links
// both ways stay full) and ask it from many goroutines at once. Each
// echo keeps handling messages in every window (no deadlock), and once
// the floods stop each peer's ask is answered. This is the case a pause
// of a peer that does not read its replies must never turn into a
// deadlock (docs/trust.md, "starve other peers at a shared actor"). It
// checks that the links were full both ways (the floods' one-way sends
// were refused with link full: else it proves nothing), and that the
// asks were not starved by them (issue 34): a link queue keeps room for
// requests and replies (routing/rooms.go), so at least minAnswered of
// each side's asks are answered within their timeout, and an ask that
// fails with ErrLinkFull fails at once rather than waiting for its
// timeout.
func TestTwoHonestFloodsDoNotDeadlock(t *testing.T) {
	const minAnswered = 0.9
	const askers, window, windows = 8, 300 * time.Millisecond, 4
	const askTimeout = time.Second // the slowest answer seen under -race on a loaded machine: 411 ms
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
	var asked, answered, linkFull, slowLinkFull, slowest [2]atomic.Int64 // slowest: ns, of the asks answered
	var firstErr [2]atomic.Value
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
					actx, acancel := context.WithTimeout(context.Background(), askTimeout)
					t0 := time.Now()
					_, err := n.System().Ask(actx, refs[other[n]], Ping{k})
					asked[i].Add(1)
					if err != nil {
						firstErr[i].CompareAndSwap(nil, err.Error())
					}
					switch {
					case err == nil:
						answered[i].Add(1)
						for d := int64(time.Since(t0)); ; {
							if old := slowest[i].Load(); d <= old || slowest[i].CompareAndSwap(old, d) {
								break
							}
						}
					case errors.Is(err, routing.ErrLinkFull):
						linkFull[i].Add(1)
						if time.Since(t0) > askTimeout/2 {
							slowLinkFull[i].Add(1)
						}
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
	for i, n := range []*peer.Node{a, b} {
		if st := n.Router().Stats(); st.LinkFull == 0 {
			t.Errorf("node %d's link never filled (%+v): the floods did not load it", i, st)
		}
		if slowLinkFull[i].Load() != 0 {
			t.Errorf("node %d: %d asks failed with ErrLinkFull, %d of them after half their timeout: want all at once",
				i, linkFull[i].Load(), slowLinkFull[i].Load())
		}
		if n, ok := asked[i].Load(), answered[i].Load(); n < askers || float64(ok) < minAnswered*float64(n) {
			t.Errorf("node %d: %d of %d asks answered during the floods, want %.0f %% at least (first error: %v): the floods starve them",
				i, ok, n, 100*minAnswered, firstErr[i].Load())
		}
	}
	for _, n := range []*peer.Node{a, b} {
		actx, acancel := askCtx()
		if _, err := n.System().Ask(actx, refs[other[n]], Ping{-1}); err != nil {
			t.Fatalf("an ask after the floods: %v", err)
		}
		acancel()
	}
	t.Logf("in %v the echoes handled %d and %d messages; asks during the floods answered %d of %d and %d of %d (slowest %v and %v), failed with link full %d and %d; reply pauses %d and %d",
		window*windows, last[0], last[1], answered[0].Load(), asked[0].Load(), answered[1].Load(), asked[1].Load(),
		time.Duration(slowest[0].Load()).Round(time.Millisecond), time.Duration(slowest[1].Load()).Round(time.Millisecond), linkFull[0].Load(), linkFull[1].Load(),
		a.Router().Stats().ReplyPaused, b.Router().Stats().ReplyPaused)
}
