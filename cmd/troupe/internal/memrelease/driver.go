package memrelease

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// names are the runtime/metrics Read takes, in Sample's fields' order.
var names = []string{
	"/memory/classes/heap/objects:bytes",
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
	return Sample{At: time.Now(), Objects: v(0), Free: v(1), Allocs: v(2)}
}

// Off says why the process's own settings leave memory to the runtime
// (GOGC or GOMEMLIMIT set, as for the actor system's GC heap floor), or
// "" when Start may run.
func Off() string {
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, ok := os.LookupEnv(k); ok {
			return k + " set"
		}
	}
	return ""
}

// release collects twice, since a collection only moves what sync.Pools
// hold (libp2p's buffer pool among them) to their victim caches and the
// next frees it (FreeOSMemory's own collection is the second), then
// returns the free heap to the system.
func release() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Start samples the runtime every period and releases the heap when r
// says so, calling released (if not nil) with the samples before and
// after each release. The returned func stops it and waits.
func Start(r *Rule, period time.Duration, released func(before, after Sample)) (stop func()) {
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
				if before := Read(); r.Step(before) {
					release()
					after := Read()
					r.Released(before, after)
					if released != nil {
						released(before, after)
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
