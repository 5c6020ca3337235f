package eventloop

import "sync/atomic"

// Runner is the body of a task. Run is called on the loop's carrier
// goroutine.
type Runner interface {
	Run()
}

// Recoverer is implemented by a Runner that wants to learn about a panic in
// its own Run instead of having the loop log it. Recover is called on the
// loop, once, with the panic value and the stack of the panicking goroutine.
type Recoverer interface {
	Recover(v any, stack []byte)
}

// Task is an intrusive queue node. A long-lived object embeds a Task, binds
// it once with Init and submits it as often as it likes, as long as it is
// never queued twice at the same time: submitting a queued task corrupts the
// queue. Submitting allocates nothing.
type Task struct {
	next *Task
	r    Runner
}

// Init binds the task to its runner. It must be called before the first
// Submit and never while the task is queued.
func (t *Task) Init(r Runner) { t.r = r }

// Runner returns the runner the task was bound to.
func (t *Task) Runner() Runner { return t.r }

// funcTask adapts a plain func to a Task for Execute.
type funcTask struct {
	Task
	f func()
}

func (f *funcTask) Run() { f.f() }

// closedTask marks a task stack that accepts nothing more.
var closedTask = &Task{}

// taskStack is a lock-free multi-producer stack of tasks (a Treiber stack).
// Producers push with CAS; the single consumer takes the whole stack with
// one swap and reverses it, which yields every producer's tasks in the order
// it pushed them.
type taskStack struct {
	head atomic.Pointer[Task]
}

// push adds t and reports whether the stack was empty before (so the caller
// may need to wake the consumer) or false, closed=true when the stack no
// longer accepts tasks.
func (s *taskStack) push(t *Task) (ok bool) {
	for {
		old := s.head.Load()
		if old == closedTask {
			return false
		}
		t.next = old
		if s.head.CompareAndSwap(old, t) {
			return true
		}
	}
}

// takeAll removes every queued task and returns them oldest first.
func (s *taskStack) takeAll() *Task {
	h := s.head.Load()
	if h == nil || h == closedTask {
		return nil
	}
	h = s.head.Swap(nil)
	if h == closedTask { // lost a race with close; put the mark back
		s.head.Store(closedTask)
		return nil
	}
	return reverse(h)
}

// close marks the stack closed and returns the tasks still queued, oldest
// first.
func (s *taskStack) close() *Task {
	h := s.head.Swap(closedTask)
	if h == closedTask {
		return nil
	}
	return reverse(h)
}

func (s *taskStack) empty() bool {
	h := s.head.Load()
	return h == nil || h == closedTask
}

func reverse(h *Task) *Task {
	var prev *Task
	for h != nil {
		next := h.next
		h.next = prev
		prev = h
		h = next
	}
	return prev
}
