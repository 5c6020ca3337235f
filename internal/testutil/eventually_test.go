package testutil

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// fakeTB records a failure instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestEventuallySeesTheConditionOnceItHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := &fakeTB{}
		Eventually(f, 10*time.Second, "the third call", func() bool { return time.Since(start) >= 3*time.Second })
		if f.failed != "" {
			t.Fatal(f.failed)
		}
		// The pause doubles up to pollMax: the condition is seen at most
		// pollMax after it holds.
		if late := time.Since(start) - 3*time.Second; late > pollMax {
			t.Fatalf("seen %v after it held; want at most %v", late, pollMax)
		}
	})
}

func TestEventuallySaysWhatItAwaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		f := &fakeTB{}
		Eventually(f, 2*time.Second, "the name freed", func() bool { calls++; return false })
		if f.failed != "not within 2s: the name freed" {
			t.Fatalf("failure %q", f.failed)
		}
		if took := time.Since(start); took < 2*time.Second || took > 2*time.Second+pollMax {
			t.Fatalf("gave up after %v, want 2s", took)
		}
		// 1, 2, 4 ... 64 ms, then every 100 ms: about 27 calls in 2 s, not
		// 2,000.
		if calls < 10 || calls > 40 {
			t.Fatalf("%d calls in 2 s", calls)
		}
	})
}

func TestEventuallyNilGivesTheLastReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		f := &fakeTB{}
		EventuallyNil(f, time.Second, func() error { n++; return fmt.Errorf("%d of 5 peers joined", min(n, 3)) })
		if f.failed != "not within 1s: 3 of 5 peers joined" {
			t.Fatalf("failure %q", f.failed)
		}
		f = &fakeTB{}
		EventuallyNil(f, time.Second, func() error { return nil })
		if f.failed != "" {
			t.Fatalf("a condition that holds failed: %q", f.failed)
		}
	})
}

// TestPollCallsOnceMoreAfterTheDeadline: a condition that came true
// while the last pause ran past the deadline is still seen.
func TestPollCallsOnceMoreAfterTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		err := poll(50*time.Millisecond, func() error {
			if time.Since(start) >= 50*time.Millisecond {
				return nil
			}
			return errors.New("early")
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestWithinReportsWithoutFailing: Within says whether the condition
// held, once it does or once d has passed, and fails nothing.
func TestWithinReportsWithoutFailing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Within(10*time.Second, func() bool { return time.Since(start) >= 3*time.Second }) {
			t.Fatal("a condition that came true within the bound reported false")
		}
		if late := time.Since(start) - 3*time.Second; late > pollMax {
			t.Fatalf("seen %v after it held; want at most %v", late, pollMax)
		}
		start = time.Now()
		if Within(2*time.Second, func() bool { return false }) {
			t.Fatal("a condition that never held reported true")
		}
		if took := time.Since(start); took < 2*time.Second || took > 2*time.Second+pollMax {
			t.Fatalf("gave up after %v, want 2s", took)
		}
	})
}
