package testutil

import (
	"testing"
	"time"
)

// Polling is for conditions no event announces (a counter on another
// node, another process's view, a table filled by a background loop):
// where a test can await an event, it should.

// pollFirst and pollMax bound the pause between two polls: it starts
// short, so a condition that holds soon is seen soon, and doubles up to
// pollMax, so a long wait does not keep a core busy.
const (
	pollFirst = time.Millisecond
	pollMax   = 100 * time.Millisecond
)

// Eventually polls cond until it reports true and fails t if it has not
// within d; the failure says what was awaited ("not within 10s: the
// name freed"). Call it from the test's goroutine.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := poll(d, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}); err != nil {
		t.Fatalf("not within %v: %s", d, what)
	}
}

// EventuallyNil polls cond until it returns nil and fails t if it has
// not within d, with cond's last error as the reason: a condition that
// can say how far it got ("3 of 5 peers joined") says it when the wait
// fails. Call it from the test's goroutine.
func EventuallyNil(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	if err := poll(d, cond); err != nil {
		t.Fatalf("not within %v: %v", d, err)
	}
}

// Within polls cond as Eventually does and reports whether it held
// within d, without failing the test: for a wait whose outcome the test
// records and judges later, as a measurement that reports the last value
// it saw and how long it waited. It is safe for concurrent use.
func Within(d time.Duration, cond func() bool) bool {
	return poll(d, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) == nil
}

// errNotYet is Eventually's reason for a condition that does not hold.
var errNotYet = notYet{}

type notYet struct{}

func (notYet) Error() string { return "condition not met" }

// poll calls cond until it returns nil, or until d has passed since the
// first call; then it returns cond's last error. cond is always called
// once more after the deadline, so a wait that a slow machine stretched
// past d still sees a condition that holds by then.
func poll(d time.Duration, cond func() error) error {
	deadline := time.Now().Add(d)
	pause := pollFirst
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(min(pause, time.Until(deadline)+time.Millisecond))
		pause = min(2*pause, pollMax)
	}
}
