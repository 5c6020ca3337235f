package memrelease

import (
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mib = 1 << 20

func TestRuleReleasesWhatIsKeptBeyondTheBaseline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	r := New()
	step := func(what string, s Sample, want bool) {
		t.Helper()
		if got := r.Step(s); got != want {
			t.Fatalf("%s: Step = %v, want %v", what, got, want)
		}
	}
	step("the first sample sets the baseline", Sample{At: at(0), Objects: 10 * mib, Allocs: 100 * mib}, false)
	step("busy: 100 MiB allocated since", Sample{At: at(5), Objects: 400 * mib, Allocs: 200 * mib}, false)
	step("quiet, but within the threshold", Sample{At: at(10), Objects: 30 * mib, Free: 11 * mib, Allocs: 200*mib + DefaultQuiet}, false)
	// An attack's buffers, marked live by the collection before they
	// were let go: only the baseline tells they are kept.
	step("quiet, 390 MiB kept beyond it", Sample{At: at(15), Objects: 400 * mib, Allocs: 201*mib + DefaultQuiet}, true)
	r.Released(Sample{At: at(15), Objects: 400 * mib}, Sample{At: at(16), Objects: 12 * mib, Allocs: 202*mib + DefaultQuiet})
	step("within MinGap of the release", Sample{At: at(20), Objects: 400 * mib, Allocs: 202*mib + DefaultQuiet}, false)
	step("after MinGap, free heap counts", Sample{At: at(26), Objects: 12 * mib, Free: 40 * mib, Allocs: 202*mib + DefaultQuiet}, true)

	// A hoarder that keeps what it holds: releases give back little, so
	// the gap doubles up to MaxGap; the baseline stays the idle heap, so
	// that the hoard is given back once it is let go.
	r.Released(Sample{At: at(26), Objects: 300 * mib}, Sample{At: at(26), Objects: 290 * mib, Allocs: 203 * mib})
	if r.gap != 2*DefaultMinGap || r.baseline != 10*mib {
		t.Fatalf("after a release of 10 MiB: gap %v, baseline %d MiB; want %v, 10", r.gap, r.baseline/mib, 2*DefaultMinGap)
	}
	step("within the doubled gap", Sample{At: at(40), Objects: 300 * mib, Allocs: 203 * mib}, false)
	step("after it", Sample{At: at(46), Objects: 300 * mib, Allocs: 203 * mib}, true)
	for range 10 {
		r.Released(Sample{Objects: 400 * mib}, Sample{Objects: 399 * mib})
	}
	if r.gap != DefaultMaxGap {
		t.Fatalf("gap %v after releases that gave back little, want MaxGap %v", r.gap, DefaultMaxGap)
	}
	r.Released(Sample{Objects: 400 * mib}, Sample{At: at(100), Objects: 20 * mib, Allocs: 300 * mib})
	if r.gap != DefaultMinGap {
		t.Fatalf("gap %v after a release that gave back 380 MiB, want MinGap", r.gap)
	}
	step("a counter that went back is no quiet", Sample{At: at(200), Objects: 500 * mib, Allocs: 5 * mib}, false)
}

func TestReadsMetricsTheRuntimeHas(t *testing.T) {
	all := metrics.All()
	for _, n := range names {
		i := slices.IndexFunc(all, func(d metrics.Description) bool { return d.Name == n })
		if i < 0 || all[i].Kind != metrics.KindUint64 {
			t.Errorf("runtime/metrics has no uint64 %s", n)
		}
	}
	if s := Read(); s.Objects == 0 || s.Allocs == 0 {
		t.Fatalf("Read = %+v: heap objects and allocations are never 0", s)
	}
}

func TestStartReleases(t *testing.T) {
	// Any quiet sample qualifies (the rule's arithmetic is tested
	// above): the driver must release and report it, and the release
	// must leave no free heap unreturned.
	released := make(chan [2]Sample, 1)
	r := &Rule{Threshold: 0, Quiet: 1 << 40, MinGap: time.Hour, MaxGap: time.Hour}
	stop := Start(r, 10*time.Millisecond, func(before, after Sample) { released <- [2]Sample{before, after} })
	defer stop()
	select {
	case s := <-released:
		if s[1].Free > 4*mib {
			t.Fatalf("after the release %d bytes of free heap are not returned", s[1].Free)
		}
		if r.baseline > s[1].Objects {
			t.Fatalf("baseline %d after a release, above the objects after it, %d", r.baseline, s[1].Objects)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no release within 10 s")
	}
	select {
	case <-released:
		t.Fatal("released twice within MinGap")
	case <-time.After(50 * time.Millisecond):
	}
	stop() // twice is fine
}
