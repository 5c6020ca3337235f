package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/troupe-mesh/troupe/peer"
)

// Above the lookup threshold a peer holds the advertisements of the
// peers it is connected to only (docs/scale.md, "Names by lookup"):
// "every peer holds every advertisement" no longer holds, and the
// scale driver waits instead until every name of a sample is found by
// Whereis.

// whereisSamples is how many (asker, name) pairs whereisAll draws.
const whereisSamples = 100

// whereisAll draws whereisSamples pairs of a local asker and another
// peer's name (a seed of its own: the other samples' answers are not
// cached by it) and has each asker find its name by Whereis, retrying
// every 500 ms, 16 at a time, until every pair found it, or fails once
// deadline has passed since start, saying how many were not found and
// the first error.
func whereisAll(nodes []*peer.Node, n int, start time.Time, deadline time.Duration) error {
	r := rand.New(rand.NewPCG(3, uint64(n)))
	pairs := randomPairs(len(nodes), n, whereisSamples, r)
	var (
		mu       sync.Mutex
		missing  int
		firstErr error
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, 16)
	for _, p := range pairs {
		wg.Go(func() {
			for {
				if time.Since(start) > deadline {
					mu.Lock()
					missing++
					mu.Unlock()
					return
				}
				slots <- struct{}{}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := nodes[p[0]].Whereis(ctx, svcName(p[1]))
				cancel()
				<-slots
				if err == nil {
					return
				}
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				time.Sleep(500 * time.Millisecond) // the pace of the retries, not a wait for an event
			}
		})
	}
	wg.Wait()
	if missing > 0 {
		return fmt.Errorf("after %v %d of %d sampled names are still not found by Whereis; first error: %w",
			deadline, missing, whereisSamples, firstErr)
	}
	return nil
}
