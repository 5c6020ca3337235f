package main

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// latch closes its channel once it has been counted down n times. Safe for
// concurrent use.
type latch struct {
	left atomic.Int64
	done chan struct{}
}

func newLatch(n int) *latch {
	l := &latch{done: make(chan struct{})}
	l.left.Store(int64(n))
	if n <= 0 {
		close(l.done)
	}
	return l
}

func (l *latch) countDown() {
	if l.left.Add(-1) == 0 {
		close(l.done)
	}
}

// wait waits for the latch, at most timeout.
func (l *latch) wait(what string, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-l.done:
		return nil
	case <-t.C:
		return fmt.Errorf("%s: timed out after %v with %d left", what, timeout, l.left.Load())
	}
}

// pairState is shared by the pingers of one ping-pong run: they poll stop
// after every reply and report how many replies they received.
type pairState struct {
	stop   atomic.Bool
	counts []int64 // replies per pair, written once by its pinger
	left   *latch
}

func newPairState(pairs int) *pairState {
	return &pairState{counts: make([]int64, pairs), left: newLatch(pairs)}
}

func (p *pairState) report(pair int, replies int64) {
	p.counts[pair] = replies
	p.left.countDown()
}

// measure lets the pairs run for d after start was called, stops them and
// returns messages per second: each reply counts with its request.
func (p *pairState) measure(start func(), d, timeout time.Duration) (float64, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gcs, cpu := ms.NumGC, processCPU()
	t0 := time.Now()
	start()
	time.Sleep(d)
	p.stop.Store(true)
	if err := p.left.wait("ping-pong", timeout); err != nil {
		return 0, err
	}
	elapsed := time.Since(t0)
	runtime.ReadMemStats(&ms)
	var replies int64
	for _, n := range p.counts {
		replies += n
	}
	lastPairs = pairCost{
		cpuPerMsg: float64((processCPU() - cpu).Nanoseconds()) / float64(2*replies),
		gcs:       float64(ms.NumGC - gcs),
	}
	return float64(2*replies) / elapsed.Seconds(), nil
}

// pairCost is what the last ping-pong run cost besides its time: the
// process's CPU time per message (every goroutine's, the collector's
// too) and the collections during the run. The harness runs one
// workload at a time.
type pairCost struct{ cpuPerMsg, gcs float64 }

var lastPairs pairCost

// ringState is shared by the members of one ring.
type ringState struct {
	ready *latch // counted down by each member once it knows its successor
	once  sync.Once
	done  chan struct{} // closed when the token's last hop arrived
}

func newRingState(n int) *ringState {
	return &ringState{ready: newLatch(n), done: make(chan struct{})}
}

func (r *ringState) finish() { r.once.Do(func() { close(r.done) }) }

// run sends the token and returns ns per hop.
func (r *ringState) run(send func(), hops int, timeout time.Duration) (float64, error) {
	if err := r.ready.wait("ring set-up", timeout); err != nil {
		return 0, err
	}
	t0 := time.Now()
	send()
	select {
	case <-r.done:
	case <-time.After(timeout):
		return 0, fmt.Errorf("ring: token lost or too slow after %v", timeout)
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(hops), nil
}

// memInUse collects garbage and returns HeapInuse+StackInuse.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// settle waits until at most goroutines goroutines run, so that the stacks of
// goroutines that just finished handling a start message are gone.
func settle(goroutines int) {
	for i := 0; i < 200 && runtime.NumGoroutine() > goroutines; i++ {
		time.Sleep(5 * time.Millisecond)
	}
}

// perActor returns the memory growth per actor since before.
func perActor(before uint64, n int) float64 {
	after := memInUse()
	return (float64(after) - float64(before)) / float64(n)
}

// median returns the median of vs (the mean of the middle two for an even
// count).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
