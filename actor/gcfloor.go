package actor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultGCHeapFloor is the heap goal below which a System started with
// default options keeps Go's collector from running (see WithGCHeapFloor).
const DefaultGCHeapFloor = 32 << 20

// goHeapMinimum is Go's smallest heap goal at GOGC=100; it scales with
// GOGC.
const goHeapMinimum = 4 << 20

// maxGCHeapFloor is the largest floor WithGCHeapFloor takes: its GC percent
// (up to floor × 100 / 4 MiB) then fits the runtime's int32, which a
// larger one would wrap, possibly to a negative percent: the GC off.
const maxGCHeapFloor = 1 << 40

// GCHeapFloor says what the GC heap floor of WithGCHeapFloor does in this
// process (System.GCHeapFloor).
type GCHeapFloor struct {
	// Bytes is the floor in force: the smallest heap goal the collector
	// is given, the largest floor of the process's running systems; 0 when
	// none is (Reason says why).
	Bytes int64 `json:"bytes"`
	// GOGC is the GC percent the floor set after the last collection; 0
	// when the floor set none (the live heap was big enough, or no floor
	// is in force).
	GOGC int `json:"gogc,omitempty"`
	// Reason says why no floor is in force: "off" (WithGCHeapFloor(0) in
	// every running system), "GOGC set", "GOMEMLIMIT set", "memory limit
	// set" (by debug.SetMemoryLimit), "GC off", or "GC percent changed" (the
	// program called debug.SetGCPercent while the floor was in force).
	Reason string `json:"reason,omitempty"`
}

// gcFloor is the process's one floor controller: Go's GC percent is
// process-wide, so every System that asks for a floor registers here, the
// largest floor of those running is in force, and when the last one shuts
// down the GC percent the process had before comes back.
var gcFloor = gcFloorCtl{floors: map[*System]int64{}, env: os.LookupEnv}

type gcFloorCtl struct {
	mu     sync.Mutex
	floors map[*System]int64 // the running systems that asked for a floor
	on     bool              // the floor is in force
	prev   int               // the GC percent before it was
	set    int               // the GC percent it last set; 0: none
	gen    uint64            // bumped when the floor goes out of force: stale sentinels stop
	reason string            // why it is not in force
	// The program set its own GC percent while the floor was in force:
	// no floor again in this process.
	yielded bool
	env     func(string) (string, bool) // os.LookupEnv; tests replace it
}

// gcFloorSamples reads what the floor needs of runtime/metrics.
var gcFloorSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/gc/gogc:percent"},
	{Name: "/gc/gomemlimit:bytes"},
	{Name: "/gc/scan/stack:bytes"},
	{Name: "/gc/scan/globals:bytes"},
}

// readGCLocked returns the live heap after the last collection, the GC
// percent and the memory limit.
func readGCLocked() (live uint64, percent int, limit int64) {
	metrics.Read(gcFloorSamples)
	return gcFloorSamples[0].Value.Uint64(), int(gcFloorSamples[1].Value.Uint64()),
		int64(gcFloorSamples[2].Value.Uint64())
}

// rootsLocked returns the stack scanned by the last collection and the
// globals: the roots the pacer counts with the live heap (after a
// readGCLocked).
func rootsLocked() uint64 {
	return gcFloorSamples[3].Value.Uint64() + gcFloorSamples[4].Value.Uint64()
}

// startGCFloor registers s's floor (cfg.gcFloor bytes; 0: none).
func (s *System) startGCFloor() {
	if s.cfg.gcFloor == 0 {
		return
	}
	f := &gcFloor
	f.mu.Lock()
	defer f.mu.Unlock()
	f.floors[s] = s.cfg.gcFloor
	switch {
	case f.on:
		return
	case f.yielded:
		f.reason = "GC percent changed"
		return
	}
	if v, ok := f.env("GOGC"); ok && v != "" {
		f.reason = "GOGC set"
		return
	}
	if v, ok := f.env("GOMEMLIMIT"); ok && v != "" {
		f.reason = "GOMEMLIMIT set"
		return
	}
	_, percent, limit := readGCLocked()
	switch {
	case limit != math.MaxInt64:
		f.reason = "memory limit set"
		return
	case percent < 0:
		f.reason = "GC off"
		return
	}
	f.on, f.prev, f.set, f.reason = true, percent, 0, ""
	f.adjustLocked()
	if f.on { // adjustLocked may have yielded to the program at once
		armGCSentinel(f.gen)
	}
}

// stopGCFloor unregisters s; the last system to go gives the process its
// GC percent back, unless the program changed it meanwhile.
func (s *System) stopGCFloor() {
	f := &gcFloor
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.floors[s]; !ok {
		return
	}
	delete(f.floors, s)
	if len(f.floors) > 0 {
		return
	}
	if f.on {
		f.offLocked("")
	}
}

// offLocked takes the floor out of force, restoring the GC percent when
// it is still the one the floor set.
func (f *gcFloorCtl) offLocked(reason string) {
	if f.set != 0 {
		if _, percent, _ := readGCLocked(); percent == f.set {
			debug.SetGCPercent(f.prev)
		}
	}
	f.on, f.set, f.reason = false, 0, reason
	f.gen++
}

// floorLocked returns the largest floor of the running systems.
func (f *gcFloorCtl) floorLocked() int64 {
	var m int64
	for _, b := range f.floors {
		m = max(m, b)
	}
	return m
}

// adjustLocked sets the GC percent for the live heap L of the last
// collection so that the next heap goal is the floor F. Go's goal is the
// larger of L + (L + R) × GOGC/100, R the stacks and globals it scans,
// and 4 MiB × GOGC/100, so the percent is the largest for which neither
// passes F; and the previous percent once that is no more than it.
func (f *gcFloorCtl) adjustLocked() {
	live, percent, _ := readGCLocked()
	// What the GC percent is unless the program set its own.
	current := f.prev
	if f.set != 0 {
		current = f.set
	}
	if percent != current { // the program set its own
		f.offLocked("GC percent changed")
		f.yielded = true
		return
	}
	want := f.prev
	if floor := uint64(f.floorLocked()); live < floor {
		p := min((floor-live)*100/max(live+rootsLocked(), 1), floor*100/goHeapMinimum)
		if p > uint64(f.prev) {
			want = int(p)
		}
	}
	// Small changes are not worth a call: within an eighth, keep it.
	if d := want - current; d == 0 || want != f.prev && d < current/8 && -d < current/8 {
		return
	}
	debug.SetGCPercent(want)
	f.set = want
	if want == f.prev {
		f.set = 0
	}
}

// gcSentinel is garbage made to learn of every collection: its cleanup
// runs after the cycle that found it unreachable, adjusts the GC percent
// and makes the next one.
type gcSentinel struct{ _ *byte } // a pointer: never in the tiny allocator

func armGCSentinel(gen uint64) {
	runtime.AddCleanup(&gcSentinel{}, afterGC, gen)
}

func afterGC(gen uint64) {
	f := &gcFloor
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on || f.gen != gen {
		return
	}
	f.adjustLocked()
	if f.on {
		armGCSentinel(gen)
	}
}

// GCHeapFloor returns what the process's GC heap floor does (see
// WithGCHeapFloor). Safe for concurrent use.
func (s *System) GCHeapFloor() GCHeapFloor {
	f := &gcFloor
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		r := f.reason
		if r == "" {
			r = "off"
		}
		return GCHeapFloor{Reason: r}
	}
	return GCHeapFloor{Bytes: f.floorLocked(), GOGC: f.set}
}
