package memrelease

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// names are the runtime/metrics Sample reads, in its fields' order.
var names = []string{
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/allocs:bytes",
}

// Read samples the runtime.
func Read() Sample {
	ms := make([]metrics.Sample, len(names))
	for i, n := range names {
		ms[i].Name = n
	}
	metrics.Read(ms)
	v := func(i int) uint64 {
		if ms[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return ms[i].Value.Uint64()
	}
	return Sample{At: time.Now(), Objects: v(0), Live: v(1), Free: v(2), Allocs: v(3)}
}

// release collects twice, since a collection only moves what sync.Pools
// hold (libp2p's buffer pool among them) to their victim caches and the
// next one frees it, then returns the free heap to the system.
func release() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Start samples the runtime every period and releases the heap when r
// says so, calling released (if not nil) with what Reclaimable estimated
// before each release. The returned func stops it and waits.
func Start(r *Rule, period time.Duration, released func(estimate uint64)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		r.Step(Read())
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if s := Read(); r.Step(s) {
					release()
					if released != nil {
						released(Reclaimable(s))
					}
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
