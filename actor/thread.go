package actor

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/troupe-mesh/troupe/actor/eventloop"
)

// Thread-style actors (Haller and Odersky, "Actors that unify threads and
// events", 2007): an actor whose behavior runs on a goroutine of its own
// and waits in a blocking Receive, for code that must block (a file, a
// socket, a driver, a prompt). It is a Context like any other (mailbox,
// name, links, monitors, supervision, Refs from other peers); only who
// runs it differs: its goroutine takes its messages, with the same
// selective receive as an activation, and parks on a channel when none
// matches. Senders wake it through Context.wake, whose one test of
// oThread is all an event actor pays.

// ThreadBehavior is the code a thread-style actor runs on its own
// goroutine. When it returns, the actor stops normally (or with the
// reason given to Exit).
type ThreadBehavior func(t *Thread)

// Thread is a thread-style actor: its behavior runs on a goroutine of its
// own, may block in any call, and waits for messages in a blocking
// Receive. Its *Context (embedded) gives it everything else an event
// actor has, with the same meaning: Self, Send, Reply, Respond, Request,
// Sender, Link, Monitor, TrapExit, Stop, Exit, Spawn, Join. Every method
// must be called from the thread's own goroutine (its behavior and the
// handlers its Receive runs).
//
// The Context's own Receive, ReceiveWithin and Ask (and AskThen, Loop)
// install continuations for an event loop: a thread that uses them stops
// with ErrBadReceive at its next Receive or when its behavior returns.
// Thread's Receive, ReceiveWithin and Ask shadow them.
type Thread struct {
	*Context

	// Owned by the thread's goroutine.
	body  ThreadBehavior
	last  *node // the message last received (Context.cur), given back when the next is taken
	probe *node // a message taken from the mailbox and being tested: given back if a guard panics
	ended bool  // the behavior returned
	depth int   // Receives under way, nested in one another's handlers

	wake chan struct{} // capacity 1: the one sender that moved the parked thread from idle to scheduled
}

// threadWake is a Thread as its Context's task: Run wakes the parked
// thread (keeping Run out of Thread's API).
type threadWake Thread

// Run wakes the thread, which a sender just moved from idle to scheduled:
// one signal per such move, so the channel never holds two.
func (w *threadWake) Run() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// SpawnThread starts a thread-style actor running b on a goroutine of its
// own, from plain Go code; name and opts are as for Spawn (Colocated
// picks the loop that runs its ReceiveWithin timers, nothing else).
//
// Use it for an actor that must block outside Receive (reading a file, a
// socket, a terminal; a database driver). It costs a goroutine: about
// 3 KiB parked in a shallow Receive, more as its stack grows, where an
// idle event actor takes a few hundred bytes (BenchmarkIdleThread,
// docs/benchmarks.md). An event actor never pays for threads.
func (s *System) SpawnThread(name string, b ThreadBehavior, opts ...SpawnOption) (Ref, error) {
	th, err := s.spawnThread(name, b, nil, opts)
	if err != nil {
		return Ref{}, err
	}
	return th.launch(), nil
}

// SpawnThread starts a thread-style child actor; see System.SpawnThread.
func (c *Context) SpawnThread(name string, b ThreadBehavior, opts ...SpawnOption) (Ref, error) {
	th, err := c.sys.spawnThread(name, b, c, opts)
	if err != nil {
		return Ref{}, err
	}
	return th.launch(), nil
}

// SpawnLinkThread starts a thread-style child actor linked to this one;
// the link exists before the child runs.
func (c *Context) SpawnLinkThread(name string, b ThreadBehavior, opts ...SpawnOption) (Ref, error) {
	th, err := c.sys.spawnThread(name, b, c, opts)
	if err != nil {
		return Ref{}, err
	}
	c.linkChild(th.Context)
	return th.launch(), nil
}

func (s *System) spawnThread(name string, b ThreadBehavior, parent *Context, opts []SpawnOption) (*Thread, error) {
	if b == nil {
		return nil, ErrNilBehavior
	}
	th := &Thread{body: b, wake: make(chan struct{}, 1)}
	if _, err := s.spawnActor(name, nil, th, parent, opts); err != nil {
		return nil, err
	}
	return th, nil
}

// launch starts the thread's goroutine and returns its Ref.
func (t *Thread) launch() Ref {
	ref := t.Self()
	t.sys.threads.Go(t.main)
	return ref
}

// main is the thread's goroutine.
func (t *Thread) main() {
	g := eventloop.GoID()
	t.sys.threadGs.Store(g, struct{}{})
	t.sys.threadN.Add(1)
	defer func() { // last: after finish
		t.sys.threadGs.Delete(g)
		t.sys.threadN.Add(-1)
	}()
	t.flags |= fStarted
	defer t.finish()
	t.body(t)
	t.check()
	t.ended = true
}

// onThread reports whether the caller is the goroutine of one of the
// system's thread-style actors; an event actor's system pays one load.
func (s *System) onThread() bool {
	if s.threadN.Load() == 0 {
		return false
	}
	_, ok := s.threadGs.Load(eventloop.GoID())
	return ok
}

// finish stops the actor once its behavior returned, panicked, or
// unwound with runtime.Goexit (Receive's, when the actor stops; or the
// code's own). The thread's deferred calls have run: its links and
// monitors hear of its exit after them.
func (t *Thread) finish() {
	v := recover()
	defer t.release()
	defer func() {
		// As the loop does for an activation: a panic while terminating
		// (a groupTransport's, say) is logged, the process lives on.
		if w := recover(); w != nil {
			t.sys.cfg.logger.Error("actor: panic while terminating", "actor", t.String(), "panic", fmt.Sprint(w))
		}
	}()
	switch {
	case v != nil:
		t.recoverPanic(v, debug.Stack())
	case t.ended || t.flags&fStopping != 0:
		t.end()
	default:
		t.terminate(ErrGoexit)
	}
}

// release gives back the nodes the thread still holds.
func (t *Thread) release() {
	for _, n := range [...]*node{t.last, t.probe} {
		if n != nil {
			t.give(n)
		}
	}
	t.last, t.probe, t.cur = nil, nil, nil
	if t.spare != nil {
		t.sys.nodes.Put(t.spare)
		t.spare = nil
	}
}

// Receive waits until a message that one of cases accepts is in the
// mailbox, runs that case on this goroutine, and returns. The first
// saved message some case accepts goes first; messages no case accepts
// stay, in order, for later receives, as for an event actor. Sender,
// Reply and Request then concern the message received, until the next
// Receive.
//
// Receive does not return when the actor stops meanwhile (an exit
// signal, a kill, System.Shutdown, Stop or Exit in the handler, a bad
// receive): the goroutine unwinds with runtime.Goexit, running its
// deferred calls, and the actor terminates. A thread blocked in a call of
// its own (a read, say) sees a signal only when it next calls Receive or
// returns: close what it reads to stop it at once.
//
// A thread loops with for; a handler may call Receive again (a nested
// receive), which grows the goroutine's stack as any call does. A Loop
// case stops the thread with ErrBadReceive.
func (t *Thread) Receive(cases ...Case) { t.await(cases, 0, false) }

// ReceiveWithin is Receive with a deadline: when no message matched within
// d, the Timeout case among cases runs, exactly once, and ReceiveWithin
// returns. A match cancels it.
func (t *Thread) ReceiveWithin(d time.Duration, cases ...Case) { t.await(cases, d, true) }

// Ask sends msg to `to` as a request and waits for the reply, for at most
// d: the error is as for Context.Ask's continuation (it wraps
// context.DeadlineExceeded when no reply came in time, ErrNoSuchActor
// when the request reached no actor, ErrNodeDown when the asked actor's
// peer went away). Other messages stay in the mailbox meanwhile; like
// Receive, Ask does not return when the actor stops.
func (t *Thread) Ask(to Ref, msg any, d time.Duration) (any, error) {
	if d <= 0 {
		return nil, fmt.Errorf("%w: Ask timeout %v must be positive", ErrBadReceive, d)
	}
	var reply any
	var err error
	a := t.request(to, msg, func(r any, e error) { reply, err = r, e })
	t.ReceiveWithin(d, a, Timeout(func() {
		a.done(t.Context)
		err = noReply(to, d)
	}))
	return reply, err
}

// maxNested is how deep a thread's receives may nest: continuation-style
// code that receives again in every handler nests once per message, and a
// goroutine's stack that grows for ever ends the whole process (the
// runtime's stack limit is a fatal error, not a panic). Deliberate nested
// receives go a few levels deep.
const maxNested = 1 << 14

// await is Receive and ReceiveWithin.
func (t *Thread) await(cases []Case, d time.Duration, within bool) {
	t.enter()
	if t.depth >= maxNested {
		t.fail(fmt.Errorf("%w: receives nested %d deep: a thread loops with for", ErrBadReceive, t.depth))
		runtime.Goexit()
	}
	t.depth++
	for i, cs := range cases {
		if m, ok := cs.(*multiCase); ok && m.loop {
			t.fail(fmt.Errorf("%w: case %d is a Loop: a thread loops with for", ErrBadReceive, i))
			runtime.Goexit()
		}
	}
	t.receive(cases, d, within) // checks the cases, installs them, starts the timer
	t.flags &^= fReceived
	if t.flags&fStopping != 0 {
		runtime.Goexit() // a bad receive
	}
	n, cs := t.take()
	t.handle(n, cs)
	t.depth-- // Goexit never comes back here: depth matters no more then
	t.check()
	if t.flags&fStopping != 0 {
		runtime.Goexit()
	}
}

// enter begins a Receive: the thread stops if it was told to, and gives
// back the message it received last.
func (t *Thread) enter() {
	t.check()
	if t.flags&fStopping != 0 {
		runtime.Goexit()
	}
	if n := t.last; n != nil {
		t.last, t.cur = nil, nil
		t.give(n)
	}
}

// check stops the thread with ErrBadReceive when its code installed a
// continuation (Context.Receive or Context.Ask), which no loop would run.
func (t *Thread) check() {
	if t.flags&fReceived != 0 {
		t.flags &^= fReceived
		t.fail(fmt.Errorf("%w: a thread receives with Thread.Receive and Thread.Ask, not the Context's", ErrBadReceive))
	}
}

// take waits for the first message the continuation accepts and returns
// it with its case, as an activation finds it (see Context.run): the
// saved messages first when the continuation changed, then the new ones
// in arrival order, signals handled on the way.
func (t *Thread) take() (*node, Case) {
	for {
		if t.flags&fRescan != 0 {
			t.flags &^= fRescan
			if n, cs := t.saved.takeFirst(t.cont); n != nil {
				return n, cs
			}
		}
		n := t.fresh
		if n == nil {
			if n = t.inbox.takeAll(); n == nil {
				t.park()
				continue
			}
		}
		t.fresh = n.next // n.next is left stale: whatever keeps n sets it
		t.probe = n
		switch n.kind {
		case kindSignal:
			if !t.signal(n) {
				t.probe = nil
				t.give(n)
				if t.flags&fStopping != 0 {
					runtime.Goexit()
				}
				continue
			}
			// The signal became a message (Down, or Exit when trapping).
		case kindTimeout:
			t.probe = nil
			if t.flags&fWithin != 0 && uint32(n.corr) == t.gen {
				t.timer = nil
				return n, timeoutOf(t.cont)
			}
			t.give(n) // stale: a message matched first
			continue
		}
		if cs := match(t.cont, n); cs != nil { // a guard may panic: n is the probe
			t.probe = nil
			return n, cs
		}
		if n.kind == kindReply {
			// Nobody waits for it any more (the Ask timed out).
			t.sys.deadLetter(DeadLetter{To: t.Self(), From: n.from, Msg: n.msg, Reason: ErrLateReply})
			t.probe = nil
			t.give(n)
			continue
		}
		t.probe = nil
		t.saved.append(t.sys.detach(n))
	}
}

// handle runs case cs for message n on the thread's goroutine; n stays
// the message being handled until the next Receive.
func (t *Thread) handle(n *node, cs Case) {
	if t.flags&fWithin != 0 {
		t.gen++
		t.flags &^= fWithin
		if t.timer != nil {
			t.timer.Cancel()
			t.timer = nil
		}
	}
	t.last, t.cur = n, n
	cs.run(t.Context, n)
}

// park waits, holding nothing but the goroutine, until a sender wakes the
// thread: the same idle-to-scheduled handshake as an event actor's, with
// a channel where a loop would queue the activation.
func (t *Thread) park() {
	if t.spare != nil {
		t.sys.nodes.Put(t.spare)
		t.spare = nil
	}
	t.state.Store(idle)
	if !t.inbox.nonEmpty() || !t.state.CompareAndSwap(idle, scheduled) {
		<-t.wake // the sender that moved it to scheduled signals
	}
}

// give releases n, which nothing refers to any more.
func (t *Thread) give(n *node) {
	f := freeList{acct: &t.acct}
	f.add(t.sys, n)
	f.done(t.sys)
}
