package actor

import (
	"fmt"
)

// activation is a Context as its loop runs it: the eventloop.Runner and
// Recoverer, which keep Run and Recover out of Context's API (a behavior
// calling them would re-enter the trampoline).
type activation Context

func (a *activation) Run()                        { (*Context)(a).run() }
func (a *activation) Recover(v any, stack []byte) { (*Context)(a).recoverPanic(v, stack) }
func (a *activation) String() string              { return (*Context)(a).String() }

// run is the actor's activation, run by its loop: a trampoline that handles
// up to the system's throughput of messages, one step at a time, and never
// recurses. It must only be called by the loop.
func (c *Context) run() {
	// The nodes handled go back together, at the end. The fresh nodes are
	// kept in a local variable, and c.fresh brought up to date before
	// anything else reads it (a termination, yield, or the loop's Recover
	// after a panic): a store to the heap per message costs a write barrier
	// while the GC runs. For the same reason c.cur keeps the last node
	// handled until the activation ends.
	freed := freeList{acct: &c.acct}
	fresh := c.fresh
	yielded := false
	var handling *node // the node whose handler runs: freed here if it panics
	defer func() {
		// Once yielded, the actor may already run on another carrier
		// (the watchdog's, when this one was retired in the middle of the
		// activation): nothing here may touch c then. freed is this
		// activation's own, and c.sys never changes.
		if !yielded {
			c.flushRun() // after a panic too: nothing waits in a run
			c.flushOut() // or an outbox
			c.fresh = fresh
			c.cur = nil
			freed.keep(c.sys, c.spare)
			c.spare = nil
		}
		if handling != nil { // its handler panicked: give its bytes back
			freed.add(c.sys, handling)
		}
		freed.done(c.sys)
	}()
	if c.flags&fStarted == 0 {
		c.flags |= fStarted
		b := c.cont.(startCase).b
		c.cont = nil
		b(c)
		if c.endStep() {
			return
		}
	}
	for budget := c.sys.cfg.throughput; budget > 0; {
		if c.flags&fRescan != 0 {
			c.flags &^= fRescan
			if n, cs := c.saved.takeFirst(c.cont); n != nil {
				budget--
				handling = n
				ended := c.step(n, cs)
				handling = nil
				freed.add(c.sys, n)
				if ended {
					c.fresh, fresh = fresh, nil
					c.end()
					return
				}
				continue
			}
		}
		n := fresh
		if n == nil { // the lanes first, then the inbox (lanes.go)
			if c.ext != nil && c.ext.lanes != nil {
				n = c.nextLaned()
			}
			if n == nil {
				var charged bool
				if n, charged = c.inbox.takeAllCharged(); charged {
					n = c.lanedBatch(n)
				}
				if n == nil {
					break
				}
			}
		}
		fresh = n.next // n.next is left stale: whatever keeps n sets it
		budget--
		switch n.kind {
		case kindSignal:
			handling = n
			took := c.signal(n)
			handling = nil
			if !took {
				freed.add(c.sys, n)
				if c.flags&fStopping != 0 {
					c.fresh, fresh = fresh, nil
					c.end()
					return
				}
				continue
			}
			// The signal became a message (Down, or Exit when trapping).
		case kindTimeout:
			if c.flags&fWithin != 0 && uint32(n.corr) == c.gen {
				c.timer = nil
				handling = n
				ended := c.step(n, timeoutOf(c.cont))
				handling = nil
				freed.add(c.sys, n)
				if ended {
					c.fresh, fresh = fresh, nil
					c.end()
					return
				}
				continue
			}
			freed.add(c.sys, n) // stale: a message matched first
			continue
		}
		handling = n // a guard may panic
		cs := match(c.cont, n)
		handling = nil
		if cs != nil {
			handling = n
			ended := c.step(n, cs)
			handling = nil
			freed.add(c.sys, n)
			if ended {
				c.fresh, fresh = fresh, nil
				c.end()
				return
			}
			continue
		}
		if n.kind == kindReply {
			// Nobody waits for it any more (the Ask timed out).
			handling = n // the hook may panic
			c.sys.deadLetter(DeadLetter{To: c.Self(), From: n.from, Msg: n.msg, Reason: ErrLateReply})
			handling = nil
			freed.add(c.sys, n)
			continue
		}
		c.saved.append(c.sys.detach(n))
	}
	c.fresh = fresh
	c.flushRun() // before the actor can go idle
	c.flushOut()
	c.cur = nil
	if c.spare != nil {
		freed.keep(c.sys, c.spare)
		c.spare = nil
	}
	freed.settle() // before too: a sender may wait for room
	yielded = true
	c.yield()
}

// yield ends an activation: the actor goes idle, or stays scheduled and
// queues itself again when work remains.
func (c *Context) yield() {
	if c.fresh != nil || c.flags&fRescan != 0 || c.inbox.nonEmpty() || c.lanesIfUsed() != nil {
		c.follow()
		if c.loop.Load().Submit(&c.task) == nil {
			return
		}
	}
	c.state.Store(idle)
	if c.inbox.nonEmpty() && c.state.CompareAndSwap(idle, scheduled) {
		if c.loop.Load().Submit(&c.task) != nil {
			c.state.Store(idle)
		}
	}
}

// step runs case cs for message n, which the caller then frees. It
// reports true when the actor is to terminate (end does it): it called
// Stop or Exit, or installed no continuation.
func (c *Context) step(n *node, cs Case) bool {
	if c.flags&fWithin != 0 {
		// Only a ReceiveWithin leaves a timeout behind: the generation
		// changes when its continuation does (one store less per message).
		c.gen++
		c.flags &^= fWithin
		if c.timer != nil {
			c.timer.Cancel()
			c.timer = nil
		}
	}
	c.cur = n
	cs.run(c, n)
	if c.flags&fReceived == 0 {
		if m, ok := c.cont.(*multiCase); ok && m.loop { // a Loop stays installed
			c.flags |= fReceived
			if !c.saved.empty() {
				c.flags |= fRescan
			}
		}
	}
	ended := c.flags&(fStopping|fReceived) != fReceived
	c.flags &^= fReceived
	return ended
}

// endStep is called after the behavior returned. It reports true when the
// actor terminated: it called Stop or Exit, or installed no continuation.
func (c *Context) endStep() bool {
	ended := c.flags&(fStopping|fReceived) != fReceived
	c.flags &^= fReceived
	if ended {
		c.end()
	}
	return ended
}

// end terminates the actor after a step that stopped it or installed no
// continuation.
func (c *Context) end() {
	c.cur = nil
	var reason error
	if c.flags&fStopping != 0 {
		reason = c.ext.reason
	}
	c.terminate(reason)
}

// recoverPanic is called by the loop when the activation panicked: the
// actor stops with a *PanicError. It must only be called by the loop.
func (c *Context) recoverPanic(v any, stack []byte) {
	if c.flags&fDead != 0 {
		c.sys.cfg.logger.Error("actor: panic while terminating", "actor", c.String(), "panic", fmt.Sprint(v))
		return
	}
	err := &PanicError{Value: v, Stack: stack}
	c.sys.cfg.logger.Error("actor: behavior panicked", "actor", c.String(), "panic", fmt.Sprint(v))
	c.terminate(err)
}

// terminate stops the actor with reason (nil: normal): its name is freed,
// its remaining messages become dead letters, and its links and monitors are
// told.
func (c *Context) terminate(reason error) {
	if c.flags&fDead != 0 {
		return
	}
	c.flags |= fDead
	c.flushRun() // what the actor sent goes before its exit signals
	c.flushOut()
	s := c.sys
	s.names.remove(c)
	if c.opts&oThread == 0 { // a thread is no loop's resident
		s.residents[c.loop.Load().Index()].n.Add(-1)
	}
	s.namesChanged(c.name())
	if c.timer != nil {
		c.timer.Cancel()
		c.timer = nil
	}
	self := c.Self()
	c.cont = nil
	c.cur = nil
	c.lastTo = nil
	var laned *node
	if c.ext != nil && c.ext.lanes != nil {
		laned = c.ext.lanes.takeAll()
	}
	for _, list := range []*node{c.fresh, laned, c.saved.takeAll(), c.inbox.close()} {
		for n := list; n != nil; {
			next := n.next
			n.next = nil
			why := ErrNoSuchActor
			if n.kind == kindSignal {
				// A monitor or link asked for while the actor lived (a
				// thread that never received, say): its Down or exit
				// signal tells the real reason.
				why = reason
			}
			s.undeliverable(self, n, why)
			n = next
		}
	}
	c.fresh = nil
	if e := c.ext; e != nil {
		if e.ask != nil {
			e.ask.done(c)
		}
		for g := range e.groups {
			c.leave(g)
		}
		for to := range e.links {
			c.trackRemote(edgeLink, to, 0, false)
			s.send(to, self, exitSignal{Reason: reason, Linked: true}, 0, kindSignal)
		}
		for w := range e.watchers {
			c.trackRemote(edgeWatcher, w.ref, w.id, false)
			s.send(w.ref, self, downSignal{ID: w.id, Reason: reason}, 0, kindSignal)
		}
		for id, target := range e.watching {
			c.trackRemote(edgeMonitor, target, id, false)
			s.send(target, self, demonitorSignal{ID: id}, 0, kindSignal)
		}
		c.ext = nil
	}
	s.actorGone()
}
