package actor

import (
	"sync/atomic"

	"github.com/troupe-mesh/troupe/actor/eventloop"
)

// Placement. An actor starts on a loop chosen round-robin (or its
// parent's, Colocated) and may move between two activations, never while
// one is queued or runs: partners that talk end up on one loop, where a
// message costs no cross-core traffic, as long as the loops hold about as
// many actors each.

// residents is a loop's count of actors, alone on its cache line.
type residents struct {
	n atomic.Int64
	_ [56]byte
}

// move counts an actor that leaves loop from for loop to, and reports
// true, when to holds fewer actors than from, or as many and ties is set.
func (s *System) move(from, to *eventloop.Loop, ties bool) bool {
	f, t := &s.residents[from.Index()].n, &s.residents[to.Index()].n
	if n, m := t.Load(), f.Load(); n > m || (n == m && !ties) {
		return false
	}
	t.Add(1)
	f.Add(-1)
	return true
}

// wake queues the activation of the actor, which the caller just moved
// from idle to scheduled: that gives it the right to move the actor, whose
// activation neither runs nor is queued. An actor woken by an actor of
// another loop (from) moves to that loop when it holds no more actors
// than the actor's: partners then meet on one loop and talk without
// crossing cores, and the loops stay balanced.
func (c *Context) wake(from *eventloop.Loop) {
	if c.opts&oThread != 0 { // on its own goroutine, which waits for this
		c.task.Runner().(*threadWake).Run()
		return
	}
	l := c.loop.Load()
	if from != nil && from != l && c.sys.move(l, from, true) {
		l = from
		c.loop.Store(l)
	}
	if l.Submit(&c.task) != nil {
		c.state.Store(idle) // the loop is gone: the system is shutting down
	}
}

// follow moves the actor, which has more to do after its activation, to
// the loop of the actor it last sent to, when that loop holds fewer
// actors than its own, or as many and this actor comes first of the two
// (before: by address; so that two partners do not swap loops): partners that
// never go idle, and so never wake each other, meet too. It must only be
// called by the activation, before it queues itself again.
func (c *Context) follow() {
	p := c.lastTo
	if p == nil {
		return
	}
	l, to := c.loop.Load(), p.loop.Load()
	if l != to && c.sys.move(l, to, before(c, p)) {
		c.loop.Store(to)
	}
}
