package routing

import "testing"

// A queue's writing right alone: events in, actions out, no queue, no
// goroutines. Each scenario is a run of the writer and its callers as
// outQueue drives the right.

type rightStep struct {
	ev   rightEvent
	work bool
	want rightAction
	then holder
}

func TestWriteRightScenarios(t *testing.T) {
	for _, sc := range []struct {
		name  string
		steps []rightStep
	}{
		{"a new writer holds the right: pushes neither wake nor claim it", []rightStep{
			{ev: evPushed, want: rightNone, then: heldByWriter},
			{ev: evClaim, want: rightNone, then: heldByWriter},
		}},
		{"a sleeping writer is woken by a push and takes the right back", []rightStep{
			{ev: evSleep, want: rightNone, then: heldByNone},
			{ev: evPushed, want: rightSignal, then: heldByWriter},
			{ev: evPushed, want: rightNone, then: heldByWriter}, // one wake-up is enough
			{ev: evTakeBack, want: rightOwned, then: heldByWriter},
		}},
		{"a caller claims once; the writer is not woken", []rightStep{
			{ev: evSleep, then: heldByNone},
			{ev: evClaim, want: rightClaimed, then: heldByCaller},
			{ev: evClaim, want: rightNone, then: heldByCaller},  // a second caller: queued only
			{ev: evPushed, want: rightNone, then: heldByCaller}, // the caller hands back for it
			{ev: evHandBack, work: true, want: rightSignal, then: heldByWriter},
		}},
		{"a caller with nothing left hands the right back to nobody", []rightStep{
			{ev: evSleep, then: heldByNone},
			{ev: evClaim, want: rightClaimed, then: heldByCaller},
			{ev: evHandBack, want: rightNone, then: heldByNone},
			{ev: evClaim, want: rightClaimed, then: heldByCaller}, // the next caller claims again
		}},
		{"the writer wakes (drain, close) while a caller writes: it waits, and gets the right", []rightStep{
			{ev: evSleep, then: heldByNone},
			{ev: evClaim, want: rightClaimed, then: heldByCaller},
			{ev: evTakeBack, want: rightWait, then: heldByCaller},
			{ev: evHandBack, want: rightSignal, then: heldByWriter}, // no work, but the writer waits
			{ev: evTakeBack, want: rightOwned, then: heldByWriter},
		}},
		{"a spurious wake-up takes a free right", []rightStep{
			{ev: evSleep, then: heldByNone},
			{ev: evTakeBack, want: rightOwned, then: heldByWriter},
			{ev: evClaim, want: rightNone, then: heldByWriter},
		}},
		{"a writer with work in hand never gives the right up by a push", []rightStep{
			{ev: evHandBack, work: true, want: rightNone, then: heldByWriter}, // not a caller's: no change
			{ev: evSleep, then: heldByNone},
			{ev: evSleep, then: heldByNone},
		}},
		{"a stopped writer's right is nobody's to claim", []rightStep{
			{ev: evSleep, then: heldByNone},
			{ev: evTakeBack, want: rightOwned, then: heldByWriter},
			{ev: evStop, then: heldByGone},
			{ev: evClaim, want: rightNone, then: heldByGone},
			{ev: evPushed, want: rightNone, then: heldByGone},
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			var r writeRight
			for i, s := range sc.steps {
				if got := r.step(s.ev, s.work); got != s.want || r.holder != s.then {
					t.Fatalf("step %d (event %d, work %v): action %d, holder %d; want %d, %d", i, s.ev, s.work, got, r.holder, s.want, s.then)
				}
			}
		})
	}
}

// The driver: a queue's pushes, takes and hand-backs move the right as
// the table says, and publish the writer idle exactly while the right is
// free.
func TestQueueDrivesTheRight(t *testing.T) {
	q := newOutQueue(16)
	state := func() (holder, bool) {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.right.holder, q.idle
	}
	signalled := func() bool {
		select {
		case <-q.ready:
			return true
		default:
			return false
		}
	}
	if q.take(nil, false, nil) != nil {
		t.Fatal("a batch from an empty queue")
	}
	if h, _ := state(); h != heldByWriter {
		t.Fatalf("empty with work in hand: held by %d, want the writer", h)
	}
	q.take(nil, true, nil)
	if h, idle := state(); h != heldByNone || !idle {
		t.Fatalf("asleep: held by %d, idle %v; want nobody, idle", h, idle)
	}
	if ok, claimed := q.pushClaim("a", "", "m", 0, false); !ok || !claimed || signalled() {
		t.Fatalf("claim: queued %v, claimed %v; want both, the writer asleep", ok, claimed)
	}
	if len(q.take(nil, false, nil)) != 1 {
		t.Fatal("the caller did not take its message")
	}
	q.handBack(false, nil)
	if h, idle := state(); h != heldByNone || !idle || signalled() {
		t.Fatalf("handed back with nothing left: held by %d, idle %v; want nobody, idle, no wake-up", h, idle)
	}
	q.pushClaim("a", "", "m", 0, false)
	q.pushBelow("a", "", "m2", 0, false, q.max)
	q.handBack(false, nil) // m and m2 wait: the writer's
	if h, idle := state(); h != heldByWriter || idle || !signalled() {
		t.Fatalf("handed back with messages queued: held by %d, idle %v; want the writer, woken", h, idle)
	}
	q.takeBack()
	q.stop()
	if _, claimed := q.pushClaim("a", "", "m3", 0, false); claimed {
		t.Fatal("a stopped writer's right was claimed")
	}
}

// A writer's next move, by what it knows.
func TestWriterRounds(t *testing.T) {
	for _, c := range []struct {
		name string
		f    roundFacts
		want roundMove
	}{
		{"the router closes: whatever is in hand", roundFacts{closed: true, taken: 3, inHand: true, stream: true}, moveReset},
		{"the router closes while it slept", roundFacts{closed: true, woken: true, drained: true}, moveReset},
		{"nothing queued, nothing in hand", roundFacts{stream: true}, moveSleep},
		{"nothing queued, no stream", roundFacts{}, moveSleep},
		{"nothing queued, its connection gone: sleeps (the next batch finds it)", roundFacts{stream: true, connGone: true}, moveSleep},
		{"nothing queued, cancellations in hand, no stream", roundFacts{inHand: true}, moveDial},
		{"nothing queued, a large message's fragments", roundFacts{inHand: true, stream: true}, moveWrite},
		{"a batch, a stream", roundFacts{taken: 1, stream: true}, moveWrite},
		{"a batch, no stream", roundFacts{taken: 1}, moveDial},
		{"a batch, the stream's connection gone", roundFacts{taken: 1, stream: true, connGone: true}, moveRenew},
		{"woken by a push", roundFacts{woken: true}, moveAgain},
		{"woken by the drain, the queue empty", roundFacts{woken: true, drained: true}, moveFinish},
		{"woken by the drain, a write-through's frames left", roundFacts{woken: true, drained: true, inHand: true}, moveAgain},
	} {
		if got := c.f.next(); got != c.want {
			t.Errorf("%s: move %d, want %d", c.name, got, c.want)
		}
	}
}
