package eventloop

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Wake-up states published in Loop.wakeAt: awake, or the loop-clock deadline
// the sleeping loop will wake at by itself (sleepForever for none).
const (
	awake        int64 = math.MinInt64
	sleepForever int64 = math.MaxInt64
)

// checkEvery is how many tasks run between two looks at the clock.
const checkEvery = 64

// Loop is one executor: a carrier goroutine, a task queue and a timer heap.
// Submit, Execute and Schedule are safe for concurrent use.
type Loop struct {
	g   *Group
	idx int

	// Shared with producers; atomics only.
	tasks      taskStack
	addReqs    timerStack
	cancelReqs timerStack
	wakeAt     atomic.Int64
	wakeCh     chan struct{}
	timerSeq   atomic.Uint64

	// Shared with the watchdog: run is odd while a task runs. cur is that
	// task; it is a plain field because the watchdog reads it only after its
	// CAS on run succeeded, which orders the read after the carrier's write,
	// and before it starts the next carrier.
	run atomic.Uint64
	cur Runner

	// Owned by the current carrier goroutine.
	local      *Task // taken from tasks, not yet run, oldest first
	seq        uint64
	timers     timerHeap
	park       *time.Timer
	shutSeen   bool
	lastActive int64

	done chan struct{} // closed when the loop has terminated
}

func newLoop(g *Group, idx int) *Loop {
	l := &Loop{g: g, idx: idx, wakeCh: make(chan struct{}, 1), done: make(chan struct{})}
	l.cancelReqs.cancel = true
	l.wakeAt.Store(awake)
	return l
}

// Index returns the loop's position in its group.
func (l *Loop) Index() int { return l.idx }

// Submit queues t to run on the loop. t must not be queued anywhere else.
// It returns ErrClosed when the loop has terminated; t is then not queued.
// Safe for concurrent use.
func (l *Loop) Submit(t *Task) error {
	if !l.tasks.push(t) {
		return ErrClosed
	}
	l.wake(awake)
	return nil
}

// Execute queues f to run on the loop. Safe for concurrent use.
func (l *Loop) Execute(f func()) error {
	ft := &funcTask{f: f}
	ft.r = ft
	return l.Submit(&ft.Task)
}

// Schedule runs f on the loop after d (at once when d <= 0, after the tasks
// queued before it). The returned Timer cancels it. After the group began
// shutting down, Schedule returns a timer that never fires. Safe for
// concurrent use.
func (l *Loop) Schedule(d time.Duration, f func()) *Timer {
	if d < 0 {
		d = 0
	}
	t := &Timer{f: f, loop: l, index: -1, seq: l.timerSeq.Add(1)}
	if l.g.shuttingDown.Load() {
		t.state.Store(timerCancelled)
		return t
	}
	t.when = l.now() + int64(d)
	l.addReqs.push(t)
	l.wake(t.when)
	return t
}

func (l *Loop) pushCancel(t *Timer) { l.cancelReqs.push(t) }

// InLoop reports whether the caller runs on one of this loop's carriers
// (including a carrier retired by the watchdog whose task still runs). It
// costs about a microsecond.
func (l *Loop) InLoop() bool {
	v, ok := l.g.carriers.Load(goid())
	return ok && v.(*Loop) == l
}

// wake makes a sleeping loop run when it sleeps past `when` (awake: always).
func (l *Loop) wake(when int64) {
	for {
		w := l.wakeAt.Load()
		if w == awake || (when != awake && when >= w) {
			return
		}
		if l.wakeAt.CompareAndSwap(w, awake) {
			select {
			case l.wakeCh <- struct{}{}:
			default:
			}
			return
		}
	}
}

func (l *Loop) now() int64 { return int64(time.Since(l.g.epoch)) }

// carry is the body of a carrier goroutine. A fresh carrier started by the
// watchdog continues exactly where the blocked one stopped.
func (l *Loop) carry() {
	defer l.g.wg.Done()
	id := goid()
	l.g.carriers.Store(id, l)
	defer l.g.carriers.Delete(id)

	l.seq = l.run.Load()
	for {
		if l.g.forced.Load() {
			l.terminate()
			return
		}
		l.takeTimerReqs()
		if len(l.timers) > 0 {
			if !l.runDueTimers() {
				return
			}
		}
		if l.local == nil {
			l.local = l.tasks.takeAll()
		}
		if l.local != nil {
			if !l.runBatch() {
				return
			}
			continue
		}
		if l.shutSeen && l.now()-l.lastActive >= int64(l.g.quiet()) {
			if l.terminate() {
				return
			}
			continue
		}
		l.sleep()
	}
}

// runBatch runs the tasks taken from the queue. It reports false when the
// watchdog retired this carrier.
func (l *Loop) runBatch() bool {
	start := int64(0)
	n := 0
	for l.local != nil {
		t := l.local
		l.local = t.next
		t.next = nil
		l.cur = t.r
		if !l.runOne(t.r) {
			return false
		}
		n++
		if n%checkEvery == 0 {
			if l.g.forced.Load() {
				return true
			}
			now := l.now()
			if start == 0 {
				start = now
				continue
			}
			if now-start >= int64(l.g.cfg.maxBatch) || (len(l.timers) > 0 && l.timers[0].when <= now) ||
				l.addReqs.head.Load() != nil {
				break
			}
		}
	}
	if l.shutSeen {
		l.lastActive = l.now()
	}
	return true
}

// runDueTimers runs the timers whose deadline passed. It reports false when
// the watchdog retired this carrier.
func (l *Loop) runDueTimers() bool {
	now := l.now()
	n := 0
	for len(l.timers) > 0 && l.timers[0].when <= now {
		t := l.timers.remove(0)
		if !t.state.CompareAndSwap(timerPending, timerFired) {
			continue
		}
		l.cur = (*timerRun)(t)
		if !l.runOne((*timerRun)(t)) {
			return false
		}
		if n++; n%checkEvery == 0 {
			now = l.now()
		}
	}
	return true
}

// runOne runs r under the watchdog's eye. It reports false when the
// watchdog gave the loop to a fresh carrier while r ran.
func (l *Loop) runOne(r Runner) bool {
	v := l.seq + 1
	l.run.Store(v)
	l.call(r)
	if !l.run.CompareAndSwap(v, v+1) {
		return false
	}
	l.seq = v + 1
	return true
}

// call runs r and recovers its panic: the one place in Troupe where panics
// are recovered.
func (l *Loop) call(r Runner) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			if rc, ok := r.(Recoverer); ok {
				rc.Recover(v, stack)
				return
			}
			l.g.cfg.logger.Error("eventloop: task panicked", "loop", l.idx, "task", taskName(r),
				"panic", fmt.Sprint(v), "stack", string(stack))
		}
	}()
	r.Run()
}

// takeTimerReqs moves scheduled timers into the heap and removes cancelled
// ones. During shutdown every timer is dropped.
func (l *Loop) takeTimerReqs() {
	if !l.shutSeen && l.g.shuttingDown.Load() {
		l.shutSeen = true
		l.lastActive = l.now()
		for _, t := range l.timers {
			t.state.CompareAndSwap(timerPending, timerCancelled)
			t.index = -1
		}
		clear(l.timers)
		l.timers = l.timers[:0]
	}
	for t := l.addReqs.takeAll(); t != nil; {
		next := t.addNext
		t.addNext = nil
		if l.shutSeen {
			t.state.CompareAndSwap(timerPending, timerCancelled)
		} else if t.state.Load() == timerPending {
			l.timers.push(t)
		}
		t = next
	}
	for t := l.cancelReqs.takeAll(); t != nil; {
		next := t.cancelNext
		t.cancelNext = nil
		if t.index >= 0 {
			l.timers.remove(t.index)
		}
		t = next
	}
}

func (l *Loop) hasWork() bool {
	return !l.tasks.empty() || l.addReqs.head.Load() != nil || l.g.forced.Load() ||
		(!l.shutSeen && l.g.shuttingDown.Load())
}

// sleep parks the carrier until a producer wakes it, the next timer is due
// or the shutdown quiet period ends; it spins briefly first.
func (l *Loop) sleep() {
	if spin := l.g.cfg.spin; spin > 0 {
		// Bounded by the clock and by a count, so that a clock that does
		// not move (testing/synctest) cannot make it spin forever.
		end := l.now() + int64(spin)
		for i := 1; i < int(spin/(10*time.Nanosecond)); i++ {
			if l.hasWork() {
				return
			}
			if i%16 == 0 {
				if l.now() >= end {
					break
				}
				runtime.Gosched()
			}
		}
	}
	deadline := sleepForever
	if len(l.timers) > 0 {
		deadline = l.timers[0].when
	}
	if l.shutSeen {
		deadline = min(deadline, l.lastActive+int64(l.g.quiet()))
	}
	l.wakeAt.Store(deadline)
	if l.hasWork() {
		l.wakeAt.Store(awake)
		return
	}
	if deadline == sleepForever {
		<-l.wakeCh
	} else {
		d := time.Duration(deadline - l.now())
		if d > 0 {
			if l.park == nil {
				l.park = time.NewTimer(d)
			} else {
				l.park.Reset(d)
			}
			select {
			case <-l.wakeCh:
				l.park.Stop()
			case <-l.park.C:
			}
		}
	}
	l.wakeAt.Store(awake)
}

// terminate closes the task queue. Tasks that slipped in before the close
// still run unless the shutdown was forced, in which case they are counted
// as dropped. It reports false when tasks must still run.
func (l *Loop) terminate() bool {
	rest := l.tasks.close()
	if l.g.forced.Load() {
		n := 0
		for t := l.local; t != nil; t = t.next {
			n++
		}
		for t := rest; t != nil; t = t.next {
			n++
		}
		l.local = nil
		l.g.dropped.Add(uint64(n))
	} else if rest != nil {
		l.local = rest
		return false
	}
	close(l.done)
	return true
}

func taskName(r Runner) string {
	switch v := r.(type) {
	case fmt.Stringer:
		return v.String()
	case *funcTask:
		return "func"
	case *timerRun:
		return "timer"
	case nil:
		return "timer"
	}
	return fmt.Sprintf("%T", r)
}
