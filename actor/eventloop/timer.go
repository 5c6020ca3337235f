package eventloop

import "sync/atomic"

const (
	timerPending int32 = iota
	timerFired
	timerCancelled
)

// Timer is a function scheduled on a loop. Cancel is safe for concurrent
// use.
type Timer struct {
	when  int64 // loop clock nanoseconds; immutable after Schedule
	seq   uint64
	f     func()
	loop  *Loop
	state atomic.Int32

	addNext    *Timer // link in the loop's add-request stack
	cancelNext *Timer // link in the loop's cancel-request stack
	index      int    // position in the heap, -1 when not in it; owned by the loop
}

// Cancel stops the timer. It reports whether it prevented the function from
// running: false means the timer already fired or was cancelled before.
// Safe for concurrent use.
func (t *Timer) Cancel() bool {
	if t == nil || !t.state.CompareAndSwap(timerPending, timerCancelled) {
		return false
	}
	if l := t.loop; l != nil {
		l.pushCancel(t)
	}
	return true
}

// timerRun is a Timer as its loop runs it, like a task.
type timerRun Timer

func (t *timerRun) Run() { t.f() }

// timerStack is a lock-free multi-producer stack of timer requests, linked
// through one of the timer's two link fields.
type timerStack struct {
	head   atomic.Pointer[Timer]
	cancel bool // links through cancelNext instead of addNext
}

func (s *timerStack) link(t *Timer) **Timer {
	if s.cancel {
		return &t.cancelNext
	}
	return &t.addNext
}

func (s *timerStack) push(t *Timer) {
	for {
		old := s.head.Load()
		*s.link(t) = old
		if s.head.CompareAndSwap(old, t) {
			return
		}
	}
}

// takeAll returns the queued timers, newest first (order does not matter:
// the heap orders them).
func (s *timerStack) takeAll() *Timer {
	if s.head.Load() == nil {
		return nil
	}
	return s.head.Swap(nil)
}

// timerHeap is a min-heap by (when, seq), owned by the loop's carrier.
type timerHeap []*Timer

func (h timerHeap) less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *timerHeap) push(t *Timer) {
	t.index = len(*h)
	*h = append(*h, t)
	h.up(t.index)
}

func (h *timerHeap) remove(i int) *Timer {
	old := *h
	n := len(old) - 1
	t := old[i]
	if i != n {
		old.swap(i, n)
	}
	old[n] = nil
	*h = old[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	t.index = -1
	return t
}

func (h timerHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h timerHeap) down(i0 int) bool {
	i := i0
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n || l < 0 {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
