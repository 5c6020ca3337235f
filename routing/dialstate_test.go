package routing

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// A writer's dial alone: events in, actions out (dialstate.go), then its
// driver's timing under a fake clock (runDial). dial_test.go has the
// writer itself dialing.

type dialStep struct {
	ev   dialEvent
	want dialAction
}

func TestDialScenarios(t *testing.T) {
	const unit = 50 * time.Millisecond
	for _, sc := range []struct {
		name  string
		steps []dialStep
	}{
		{"the first attempt opens the stream", []dialStep{
			{dialStart, dialAction{do: doDial, attempt: 1}},
			{dialOpened, dialAction{do: doUse}},
		}},
		{"three attempts, 100 and 200 ms apart, then the peer is unreachable", []dialStep{
			{dialStart, dialAction{do: doDial, attempt: 1}},
			{dialFailed, dialAction{do: doWait, wait: 100 * time.Millisecond}},
			{dialWaited, dialAction{do: doDial, attempt: 2}},
			{dialFailed, dialAction{do: doWait, wait: 200 * time.Millisecond}},
			{dialWaited, dialAction{do: doDial, attempt: 3}},
			{dialFailed, dialAction{do: doGiveUp}},
		}},
		{"the third attempt may still open it", []dialStep{
			{dialStart, dialAction{do: doDial, attempt: 1}},
			{dialFailed, dialAction{do: doWait, wait: 100 * time.Millisecond}},
			{dialWaited, dialAction{do: doDial, attempt: 2}},
			{dialFailed, dialAction{do: doWait, wait: 200 * time.Millisecond}},
			{dialWaited, dialAction{do: doDial, attempt: 3}},
			{dialOpened, dialAction{do: doUse}},
		}},
		{"the router closes during a wait: what is in hand is lost", []dialStep{
			{dialStart, dialAction{do: doDial, attempt: 1}},
			{dialFailed, dialAction{do: doWait, wait: 100 * time.Millisecond}},
			{dialClosed, dialAction{do: doAbort}},
		}},
		{"a new dial starts from the first attempt", []dialStep{
			{dialStart, dialAction{do: doDial, attempt: 1}},
			{dialFailed, dialAction{do: doWait, wait: 100 * time.Millisecond}},
			{dialWaited, dialAction{do: doDial, attempt: 2}},
			{dialFailed, dialAction{do: doWait, wait: 200 * time.Millisecond}},
			{dialStart, dialAction{do: doDial, attempt: 1}},
			{dialFailed, dialAction{do: doWait, wait: 100 * time.Millisecond}},
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			d := dialState{unit: unit}
			for i, s := range sc.steps {
				if got := d.step(s.ev); got != s.want {
					t.Fatalf("step %d (event %d): %+v, want %+v", i, s.ev, got, s.want)
				}
			}
		})
	}
}

// The driver under a fake clock: when it dials, how long it waits, what
// it returns, and that a close during a wait ends it at once.
func TestRunDial(t *testing.T) {
	const ms = time.Millisecond
	errDial := errors.New("no route")
	for _, c := range []struct {
		name    string
		opensAt int           // the attempt that opens the stream (0: none)
		closeAt time.Duration // when the router closes (0: never)
		last    time.Duration // how long the last attempt takes
		want    dialDo
		dials   []time.Duration // when each attempt ran, from the start
		ends    time.Duration   // when runDial returned
	}{
		{"unreachable", 0, 0, 0, doGiveUp, []time.Duration{0, 100 * ms, 300 * ms}, 300 * ms},
		{"opened at once", 1, 0, 0, doUse, []time.Duration{0}, 0},
		{"opened at the second attempt", 2, 0, 0, doUse, []time.Duration{0, 100 * ms}, 100 * ms},
		{"closed in the second wait", 0, 150 * ms, 0, doAbort, []time.Duration{0, 100 * ms}, 150 * ms},
		{"closed during the last attempt: given up, not aborted", 0, 310 * ms, 20 * ms, doGiveUp, []time.Duration{0, 100 * ms, 300 * ms}, 320 * ms},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if c.closeAt > 0 {
					time.AfterFunc(c.closeAt, cancel)
				}
				start := time.Now()
				var dials []time.Duration
				d := dialState{unit: 50 * time.Millisecond}
				got := runDial(ctx, &d, func(attempt int) error {
					dials = append(dials, time.Since(start))
					if attempt != len(dials) {
						t.Errorf("attempt %d numbered %d", len(dials), attempt)
					}
					if attempt == maxDials {
						time.Sleep(c.last)
					}
					if attempt == c.opensAt {
						return nil
					}
					return errDial
				})
				ends := time.Since(start)
				if got != c.want || !slices.Equal(dials, c.dials) || ends != c.ends {
					t.Fatalf("outcome %d, dials at %v, returned at %v; want %d, %v, %v", got, dials, ends, c.want, c.dials, c.ends)
				}
			})
		})
	}
}
