package memrelease

import "time"

// Sample is what Rule reads of the runtime at one moment.
type Sample struct {
	At      time.Time
	Objects uint64 // heap bytes in objects, live or not yet swept (/memory/classes/heap/objects:bytes)
	Free    uint64 // heap bytes free and not returned (/memory/classes/heap/free:bytes)
	Allocs  uint64 // heap bytes allocated since the start (/gc/heap/allocs:bytes)
}

// Kept is the heap the process keeps from the system: its objects, dead
// or alive, and its free bytes not returned.
func (s Sample) Kept() uint64 { return s.Objects + s.Free }

// Defaults of Rule.
const (
	DefaultThreshold = 32 << 20         // bytes kept beyond the baseline that make a release worth trying
	DefaultQuiet     = 8 << 20          // most bytes allocated between samples, for quiet
	DefaultMinGap    = 10 * time.Second // least time between releases
	DefaultMaxGap    = 2 * time.Minute  // the most the gap grows to after releases that gave back little
)

// Rule decides when to release. Its baseline is the least heap seen
// kept right after a release (at first, the first sample's objects): the
// daemon's idle live heap, as far as samples can tell. A release is tried
// when the process is quiet and keeps at least Threshold beyond it;
// whether the kept bytes are garbage (an attack's buffers, let go) or
// live (a peer still hoarding) only a collection tells, so a release that
// gives back less than Threshold doubles the gap to the next, up to
// MaxGap, and one that gives back more resets it to MinGap. The zero
// value is not usable: use New.
type Rule struct {
	Threshold, Quiet uint64
	MinGap, MaxGap   time.Duration
	last             Sample
	seen             bool
	baseline         uint64
	gap              time.Duration
	released         time.Time
}

// New returns a Rule with the defaults.
func New() *Rule {
	return &Rule{Threshold: DefaultThreshold, Quiet: DefaultQuiet, MinGap: DefaultMinGap, MaxGap: DefaultMaxGap}
}

// Step takes a sample and says whether to release now; after a release
// the caller reports the sample it took then (Released). The first
// sample only sets the baseline.
func (r *Rule) Step(s Sample) bool {
	prev, seen := r.last, r.seen
	r.last, r.seen = s, true
	if !seen {
		r.baseline, r.gap = s.Objects, r.MinGap
		return false
	}
	if s.Allocs < prev.Allocs {
		return false
	}
	quiet := s.Allocs-prev.Allocs <= r.Quiet
	due := r.released.IsZero() || s.At.Sub(r.released) >= r.gap
	return quiet && due && s.Kept() >= r.baseline+r.Threshold
}

// Released tells the rule that a release, asked for with before, ended
// with after: after's objects lower the baseline if they are below it,
// and what it gave back sets the gap to the next.
func (r *Rule) Released(before, after Sample) {
	r.released, r.baseline, r.last = after.At, min(r.baseline, after.Objects), after
	if before.Kept() < after.Kept()+r.Threshold {
		r.gap = min(2*r.gap, r.MaxGap)
	} else {
		r.gap = r.MinGap
	}
}
