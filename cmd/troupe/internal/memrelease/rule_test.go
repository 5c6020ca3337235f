package memrelease

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mib = 1 << 20

func TestRuleReleasesOnceQuietWithEnoughToGive(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		name string
		s    Sample
		want bool
	}{
		{"the first sample sets the baseline", Sample{At: at(0), Objects: 400 * mib, Live: 10 * mib, Allocs: 1000 * mib}, false},
		{"busy: 100 MiB allocated since", Sample{At: at(5), Objects: 500 * mib, Live: 10 * mib, Allocs: 1100 * mib}, false},
		{"quiet, 490 MiB of garbage", Sample{At: at(10), Objects: 500 * mib, Live: 10 * mib, Allocs: 1101 * mib}, true},
		{"quiet again, but within MinGap", Sample{At: at(15), Objects: 500 * mib, Live: 10 * mib, Allocs: 1101 * mib}, false},
		{"after MinGap, too little to give", Sample{At: at(50), Objects: 30 * mib, Live: 10 * mib, Free: 3 * mib, Allocs: 1102 * mib}, false},
		{"after MinGap, free heap not returned counts", Sample{At: at(55), Objects: 20 * mib, Live: 10 * mib, Free: 60 * mib, Allocs: 1102 * mib}, true},
		{"a counter that went back is no quiet", Sample{At: at(100), Objects: 500 * mib, Live: 10 * mib, Allocs: 5 * mib}, false},
	}
	r := New()
	for _, st := range steps {
		if got := r.Step(st.s); got != st.want {
			t.Fatalf("%s: Step = %v, want %v", st.name, got, st.want)
		}
	}
}

func TestReclaimableNeverUnderflows(t *testing.T) {
	if got := Reclaimable(Sample{Objects: 5 * mib, Live: 8 * mib, Free: mib}); got != mib {
		t.Fatalf("Reclaimable = %d, want %d (objects below live count as none)", got, mib)
	}
}

func TestStartReleases(t *testing.T) {
	// Any quiet sample qualifies (the rule's arithmetic is tested
	// above): the driver must release and report it, and the release
	// must leave no free heap unreturned.
	released := make(chan uint64, 1)
	r := &Rule{Threshold: 0, Quiet: 1 << 40, MinGap: time.Hour}
	stop := Start(r, 10*time.Millisecond, func(est uint64) { released <- est })
	defer stop()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("no release within 10 s")
	}
	if s := Read(); s.Free > 4*mib {
		t.Fatalf("after the release %d bytes of free heap are not returned", s.Free)
	}
	select {
	case <-released:
		t.Fatal("released twice within MinGap")
	case <-time.After(50 * time.Millisecond):
	}
	stop() // twice is fine
}
