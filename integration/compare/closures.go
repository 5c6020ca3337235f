package main

import (
	"runtime"
	"sync"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

// The floor under the paper-style rows: the closures that tPongLoop and
// tPingLoop make per round trip (same captures), made on every core with
// no actor system at all. No runtime that takes such closures can run a
// paper-style round trip in less time than this.

// closureSlot stands for an actor's installed continuation.
type closureSlot struct{ f func() }

//go:noinline
func (s *closureSlot) install(f func()) { s.f = f }

func cPongLoop(s *closureSlot, c *actor.Context, peer actor.Ref) {
	s.install(func() {
		_, _ = c, peer
		cPongLoop(s, c, peer)
	})
}

func cPingLoop(s *closureSlot, c *actor.Context, pong actor.Ref, pair int, n int64, st *pairState) {
	s.install(func() {
		n++
		if st.stop.Load() {
			st.report(pair, n)
			return
		}
		_, _ = c, pong
		cPingLoop(s, c, pong, pair, n, st)
	})
}

// paperClosures runs one goroutine per core, each making a round trip's
// closures in a loop for d, and returns the messages per second that
// many round trips would carry (two each).
func paperClosures(d time.Duration) (float64, error) {
	procs := runtime.GOMAXPROCS(0)
	st := newPairState(procs)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pongs, pings closureSlot
			var c *actor.Context
			ref := actor.Ref{}
			cPongLoop(&pongs, c, ref)
			cPingLoop(&pings, c, ref, i, 0, st)
			for !st.stop.Load() {
				for range 1024 {
					pongs.f()
					pings.f()
				}
			}
			pings.f() // reports
		}()
	}
	time.Sleep(d)
	st.stop.Store(true)
	wg.Wait()
	elapsed := time.Since(t0)
	var trips int64
	for _, n := range st.counts {
		trips += n
	}
	return float64(2*trips) / elapsed.Seconds(), nil
}
