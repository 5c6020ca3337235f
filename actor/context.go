package actor

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/troupe-mesh/troupe/actor/eventloop"
)

// Behavior is the code an actor starts with. It ends by installing a
// Receive (to wait for a message) or by returning without one (the actor then
// stops normally).
type Behavior func(c *Context)

// Scheduling states (Context.state).
const (
	idle      int32 = iota // no activation queued or running
	scheduled              // an activation is queued or running
)

// Flags (Context.flags), owned by the actor's activation.
const (
	fStarted  uint32 = 1 << iota // the behavior ran
	fReceived                    // Receive was called in the current step
	fRescan                      // the continuation changed: rescan saved messages
	fTrapExit                    // exit signals become Exit messages
	fStopping                    // Stop or Exit was called, or a receive was bad
	fDead                        // terminated
	fWithin                      // the continuation has a Timeout case
)

// Spawn options (Context.opts), fixed at spawn.
const (
	oAcceptRemoteLinks uint8 = 1 << iota // actors of other peers may link to it
	oAcceptUnknown                       // takes messages of types unknown here from other peers
	oThread                              // a thread-style actor: runs on its own goroutine (thread.go)
)

// Context is an actor: its mailbox, its continuation and its API. A behavior
// receives its *Context and uses it for everything; every method must be
// called from the actor's own behavior or handlers (its loop), never from
// another goroutine, unless its comment says otherwise.
//
// An idle actor is this struct, its saved messages and its continuation:
// no goroutine, no queued task.
type Context struct {
	// The fields are laid out so that those senders write (inbox, state)
	// and those the activation writes per message (cur to gen) are 64
	// bytes apart, within the struct and from its neighbours in memory
	// (176 bytes, a size class): no false sharing between
	// the senders' cores and the actor's.

	inbox inbox                          // pushed by senders
	state atomic.Int32                   // idle or scheduled; CAS by senders
	opts  uint8                          // spawn options (oAccept...): set before the actor is registered, then read-only
	acct  atomic.Pointer[mailboxAcct]    // nil until the actor has a limit or a message charged to a Credit
	loop  atomic.Pointer[eventloop.Loop] // changed only by whoever schedules the actor (see wake, follow)
	task  eventloop.Task                 // the activation; Run is its body
	sys   *System
	ref   string // Self's Ref: "<peer>/<name>" (see name)

	// Owned by the activation.
	fresh *node // taken from the inbox, not yet tested, oldest first (Run keeps it in a local while it runs)
	cur   *node // the message being handled (stale between the steps of an activation)
	// Free nodes for Send, taken from the system's pool as one run and
	// given back with the nodes the activation handled: nil between
	// activations.
	spare *node
	flags uint32
	gen   uint32 // receive generation, matched against timeout nodes
	cont  Case   // the continuation: one case, a *multiCase, or the startCase
	saved savedList
	timer *eventloop.Timer
	ext   *ext // links, monitors, exit reason; nil until needed

	// A one-entry cache of the last local actor this one sent to, so that
	// an actor talking to one partner skips the name lookup. A stale entry
	// (the partner stopped) is detected by its closed inbox.
	lastTo  *Context
	sendRun *node // the oldest of the messages queued for lastTo (see queueRun)

	// Messages to other peers sent during the activation, handed to the
	// batchRemote in runs (see flushOut); nil until the actor sends one.
	out *outbox
}

// ext holds what few actors need.
type ext struct {
	links    map[Ref]struct{}
	watchers map[monitorEdge]struct{} // who monitors this actor
	watching map[MonitorID]Ref        // whom this actor monitors
	groups   map[string]struct{}
	reason   error    // exit reason once fStopping is set
	ask      *askCase // the pending Ask of an actor on another peer
	lanes    *laneSet // messages of other peers, one lane per sender peer (lanes.go)
}

func (c *Context) extra() *ext {
	if c.ext == nil {
		c.ext = &ext{}
	}
	return c.ext
}

// Self returns the actor's own Ref.
func (c *Context) Self() Ref { return Ref{s: c.ref} }

// name returns the actor's name: its Ref after the peer. Safe for
// concurrent use.
func (c *Context) name() string { return c.ref[len(c.sys.peer)+1:] }

// String returns the actor's Ref as text. Safe for concurrent use.
func (c *Context) String() string { return c.ref }

// System returns the system the actor lives in.
func (c *Context) System() *System { return c.sys }

// Sender returns the sender of the message being handled; the zero Ref when
// it came from plain Go code of this peer (System.Send) or in the
// behavior's first step. Routing gives a message from plain code of
// another peer the sender "<peer>/$", which no actor is.
func (c *Context) Sender() Ref {
	if c.cur == nil {
		return Ref{}
	}
	return c.cur.from
}

// Receive installs cases as the actor's continuation and returns at once; it
// never runs a handler itself. When the current step (behavior or handler)
// returns, the first saved message that some case accepts runs that case;
// otherwise the actor waits, holding no goroutine, until a new message that
// a case accepts arrives. Messages no case accepts stay, in order, for later
// receives. Receive should be the last statement of its step; calling it
// twice in one step stops the actor with ErrBadReceive.
func (c *Context) Receive(cases ...Case) {
	c.receive(cases, 0, false)
}

// ReceiveWithin is Receive with a deadline: when no message matched within
// d, the Timeout case among cases runs, exactly once. A match cancels it.
func (c *Context) ReceiveWithin(d time.Duration, cases ...Case) {
	c.receive(cases, d, true)
}

func (c *Context) receive(cases []Case, d time.Duration, within bool) {
	if c.flags&fReceived != 0 {
		c.fail(fmt.Errorf("%w: Receive called twice in one step", ErrBadReceive))
		return
	}
	c.flags |= fReceived
	if len(cases) == 0 {
		c.fail(fmt.Errorf("%w: no cases", ErrBadReceive))
		return
	}
	hasTimeout := false
	for i, cs := range cases {
		switch cs := cs.(type) {
		case nil:
			c.fail(fmt.Errorf("%w: case %d is nil", ErrBadReceive, i))
			return
		case timeoutCase:
			hasTimeout = true
		case *multiCase: // a Loop's or a Cases set: never the actor's own
			if cs.loop {
				if err := checkLoop(cases, within); err != nil {
					c.fail(err)
					return
				}
				continue
			}
			if cs.bad != nil {
				c.fail(cs.bad)
				return
			}
			hasTimeout = hasTimeout || cs.timeout
		}
	}
	switch {
	case within && d < 0:
		c.fail(fmt.Errorf("%w: negative timeout %v", ErrBadReceive, d))
		return
	case within && !hasTimeout:
		c.fail(fmt.Errorf("%w: ReceiveWithin needs a Timeout case", ErrBadReceive))
		return
	case !within && hasTimeout:
		c.fail(fmt.Errorf("%w: a Timeout case needs ReceiveWithin", ErrBadReceive))
		return
	}
	if len(cases) == 1 {
		// An actor often installs the case it is running again; leaving
		// the same value in place saves a store to the heap.
		if !sameCase(c.cont, cases[0]) {
			c.cont = cases[0]
		}
	} else if m, ok := c.cont.(*multiCase); ok && m.owned {
		// The actor's own multiCase from an earlier Receive: nothing else
		// refers to it (match hands out its cases, never itself; a Loop's
		// and a Cases set are the user's and never reused), so it takes
		// the new cases in place. An actor that builds fresh cases per
		// message, as in the paper, then allocates only its closures.
		old := m.cases
		m.cases = append(old[:0], cases...)
		if len(old) > len(cases) {
			clear(old[len(cases):]) // let the old closures go
		}
	} else {
		// Copied, so that the variadic slice can stay on the caller's stack.
		c.cont = &multiCase{cases: append([]Case(nil), cases...), owned: true}
	}
	if !c.saved.empty() {
		c.flags |= fRescan
	}
	if within {
		c.flags |= fWithin
		gen := c.gen
		c.timer = c.loop.Load().Schedule(d, func() {
			n := c.sys.newNode(nil, Ref{}, uint64(gen), kindTimeout)
			if !c.push(n) {
				c.sys.free(n)
			}
		})
	}
}

// TrapExit sets whether exit signals from linked actors arrive as Exit
// messages (true) or stop this actor when abnormal (false, the default).
// ErrKilled cannot be trapped.
func (c *Context) TrapExit(on bool) {
	if on {
		c.flags |= fTrapExit
	} else {
		c.flags &^= fTrapExit
	}
}

// Stop stops the actor normally once the current step returns, whatever it
// installed.
func (c *Context) Stop() { c.Exit(nil) }

// Exit stops the actor with reason once the current step returns; nil is a
// normal exit, which links do not propagate.
func (c *Context) Exit(reason error) {
	if c.flags&fStopping == 0 {
		c.flags |= fStopping
		c.extra().reason = reason
	}
}

// fail stops the actor with reason err after the current step.
func (c *Context) fail(err error) {
	c.Exit(err)
	c.sys.cfg.logger.Warn("actor: stopping on a programming error", "actor", c.String(), "err", err)
}

// pushRun is push for a run of nodes linked newest first, from first to
// last: one atomic operation and at most one activation for all of them.
func (c *Context) pushRun(first, last *node) bool { return c.pushRunFrom(first, last, nil) }

// pushRunFrom is pushRun by an actor that runs on loop from (see wake).
func (c *Context) pushRunFrom(first, last *node, from *eventloop.Loop) bool {
	if (first.size != 0 || c.acct.Load() != nil) && !c.admitRun(first, last) {
		return false // one at a time, as the limits refuse some
	}
	if !c.inbox.pushRun(first, last) {
		for n := first; ; n = n.next {
			c.unadmit(c.acct.Load(), n)
			if n == last {
				break
			}
		}
		return false
	}
	if c.state.Load() == idle && c.state.CompareAndSwap(idle, scheduled) {
		c.wake(from)
	}
	return true
}

// push appends n to the inbox and schedules the actor when it was idle. Safe
// for concurrent use. It reports false when the actor is dead; a message
// over the mailbox's limits it makes a dead letter itself.
func (c *Context) push(n *node) bool { return c.pushFrom(n, nil) }

// pushFrom is push by an actor that runs on loop from: an idle actor it
// wakes may move to from (see wake).
func (c *Context) pushFrom(n *node, from *eventloop.Loop) bool {
	var a *mailboxAcct
	if n.kind == kindUser {
		if a = c.acct.Load(); a == nil && n.size != 0 {
			a = c.acctOrNew()
		}
		if a != nil && !c.admit(a, n) {
			c.overflow(n)
			return true
		}
	}
	if !c.inbox.push(n) {
		c.unadmit(a, n) // dead: n goes on to another actor, or a dead letter
		return false
	}
	if c.state.Load() == idle && c.state.CompareAndSwap(idle, scheduled) {
		c.wake(from)
	}
	return true
}
