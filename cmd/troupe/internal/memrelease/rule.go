package memrelease

import "time"

// Sample is what Rule reads of the runtime at one moment.
type Sample struct {
	At      time.Time
	Objects uint64 // heap bytes in objects, live or not yet swept (/memory/classes/heap/objects:bytes)
	Live    uint64 // heap bytes marked live by the last collection (/gc/heap/live:bytes)
	Free    uint64 // heap bytes free and not returned (/memory/classes/heap/free:bytes)
	Allocs  uint64 // heap bytes allocated since the start (/gc/heap/allocs:bytes)
}

// Defaults of Rule.
const (
	DefaultThreshold = 32 << 20         // reclaimable bytes that make a release worth it
	DefaultQuiet     = 8 << 20          // most bytes allocated between samples, for quiet
	DefaultMinGap    = 30 * time.Second // least time between releases
)

// Rule decides when to release. The zero value is not usable: use New.
type Rule struct {
	Threshold, Quiet uint64
	MinGap           time.Duration
	last             Sample
	released         time.Time
	seen             bool
}

// New returns a Rule with the defaults.
func New() *Rule {
	return &Rule{Threshold: DefaultThreshold, Quiet: DefaultQuiet, MinGap: DefaultMinGap}
}

// Reclaimable is what a collection and a release would give back, as far
// as s tells: the objects beyond the last collection's live bytes (an
// upper bound: some are new and live) plus the free heap not returned.
func Reclaimable(s Sample) uint64 {
	var garbage uint64
	if s.Objects > s.Live {
		garbage = s.Objects - s.Live
	}
	return garbage + s.Free
}

// Step takes a sample and says whether to release now. The first sample
// only sets the baseline.
func (r *Rule) Step(s Sample) bool {
	prev, seen := r.last, r.seen
	r.last, r.seen = s, true
	if !seen || s.Allocs < prev.Allocs {
		return false
	}
	quiet := s.Allocs-prev.Allocs <= r.Quiet
	due := r.released.IsZero() || s.At.Sub(r.released) >= r.MinGap
	if quiet && due && Reclaimable(s) >= r.Threshold {
		r.released = s.At
		return true
	}
	return false
}
