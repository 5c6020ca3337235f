package actor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
)

// Ask sends msg to `to` as a request and installs a continuation that waits
// for the reply: then runs with the reply, or with an error when no reply
// came within d (errors.Is(err, context.DeadlineExceeded)), the request
// reached no actor (ErrNoSuchActor, ErrNoRoute, or the Remote's reason,
// such as routing.ErrUnreachable or routing.ErrStreamBroken), or the asked
// actor's peer went away before it answered (ErrNodeDown, at once: see
// Port.PeerDown). Other messages stay in the
// mailbox meanwhile. Like Receive, Ask should be the last statement of its
// step.
func (c *Context) Ask(to Ref, msg any, d time.Duration, then func(reply any, err error)) {
	if then == nil {
		c.fail(fmt.Errorf("%w: Ask needs a continuation", ErrBadReceive))
		return
	}
	if d <= 0 {
		c.fail(fmt.Errorf("%w: Ask timeout %v must be positive", ErrBadReceive, d))
		return
	}
	if c.flags&fReceived != 0 {
		// Checked before the request leaves (receive would refuse the
		// continuation only after): one step waits for one thing.
		c.fail(fmt.Errorf("%w: Ask after Receive or Ask in one step", ErrBadReceive))
		return
	}
	a := c.request(to, msg, then)
	c.ReceiveWithin(d, a, Timeout(func() {
		a.done(c)
		then(nil, noReply(to, d))
	}))
}

// request sends msg to `to` as the request of an Ask and returns the case
// that accepts its reply and calls then.
func (c *Context) request(to Ref, msg any, then func(reply any, err error)) *askCase {
	a := &askCase{corr: newCorr(), then: then}
	if !to.on(c.sys.peer) && !to.IsZero() {
		// Recorded before the request leaves, so that the peer going
		// away at any point after fails the Ask.
		a.to = to
		c.extra().ask = a
		c.trackRemote(edgeAsk, to, MonitorID(a.corr), true)
	}
	c.send(to, msg, a.corr, kindUser)
	return a
}

// noReply is the error of an Ask of `to` that had no reply within d.
func noReply(to Ref, d time.Duration) error {
	return fmt.Errorf("actor: ask %v: no reply within %v: %w", to, d, context.DeadlineExceeded)
}

// newCorr returns a new correlation ID for an Ask: random, not counted, so
// that a peer that was not asked cannot guess it and answer in the asked
// actor's place (a reply is matched by its correlation ID alone, so that an
// actor the request was forwarded to can answer it), and never 0 (no Ask).
func newCorr() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		if c := binary.LittleEndian.Uint64(b[:]); c != 0 {
			return c
		}
	}
}

// waiter stands in for an actor while plain Go code waits in System.Ask: a
// registered name whose inbox is a channel, so that the reply goes straight
// to the waiting goroutine, with no actor to spawn and no event loop in
// between. Its Context is in the waiting state, is never scheduled, and its
// fields do not change once it is registered.
type waiter struct {
	corr uint64
	done atomic.Bool // set by the one offer that is taken, or when Ask gives up
	ch   chan *node  // capacity 1: the reply, or the signal that ends the wait
}

// accepts is never called (a waiter is never an actor's continuation); it
// makes *waiter a Case so that it can sit in Context.cont.
func (w *waiter) accepts(*node) bool  { return false }
func (w *waiter) run(*Context, *node) {}

// offer takes the reply to the Ask, or System.Shutdown's kill; anything
// else is refused and becomes a dead letter, as for a stopped actor.
func (w *waiter) offer(n *node) bool {
	switch {
	case n.kind == kindReply && n.corr == w.corr:
	case n.kind == kindSignal: // only System.Shutdown's kill, which has no sender
		if x, ok := n.msg.(ExitSignal); !ok || !x.Kill || !n.from.IsZero() {
			return false
		}
	default:
		return false
	}
	if !w.done.CompareAndSwap(false, true) {
		return false // a second reply, or Ask gave up
	}
	w.ch <- n
	return true
}

// Ask sends msg to `to` from plain Go code and waits for the reply until ctx
// ends. The error wraps ctx.Err() on timeout, is ErrNoSuchActor or
// ErrNoRoute when the request reached no actor, and is ErrBlockingCall when
// called on an event loop (inside an actor use Context.Ask).
//
// The request's sender is a generated name that exists while Ask waits;
// other messages sent to it become dead letters.
func (s *System) Ask(ctx context.Context, to Ref, msg any) (any, error) {
	if s.group.InLoop() {
		return nil, ErrBlockingCall
	}
	if s.closing.Load() {
		return nil, ErrClosed
	}
	w := &waiter{corr: newCorr(), ch: make(chan *node, 1)}
	c := &Context{sys: s, ref: s.genRef(s.names.gen.take()), cont: w}
	c.state.Store(waiting)
	if !s.names.add(c) {
		return nil, fmt.Errorf("%w: %q", ErrNameTaken, c.name())
	}
	defer s.names.remove(c)
	if !to.on(s.peer) && !to.IsZero() {
		e := remoteEdge{kind: edgeAsk, local: c.Self(), remote: to, id: MonitorID(w.corr)}
		s.remote.add(e)
		defer s.remote.remove(e)
	}
	if s.direct != nil && !to.on(s.peer) && !to.IsZero() {
		// The request may be written on this goroutine: see DirectRemote.
		if err := s.direct.DeliverDirect(ctx, to, c.Self(), msg, w.corr, false); err != nil {
			s.undeliverable(to, s.newNode(msg, c.Self(), w.corr, kindUser), err)
		}
	} else {
		s.send(to, c.Self(), msg, w.corr, kindUser)
	}
	var n *node
	select {
	case n = <-w.ch:
	case <-ctx.Done():
		if w.done.CompareAndSwap(false, true) {
			return nil, fmt.Errorf("actor: ask %v: %w", to, ctx.Err())
		}
		n = <-w.ch // the reply came at the same time
	}
	defer s.free(n)
	if n.kind == kindSignal {
		return nil, fmt.Errorf("actor: ask %v: %w", to, n.msg.(ExitSignal).Reason)
	}
	if u, ok := n.msg.(Undeliverable); ok {
		if u.Reason == nil { // every sender gives one; a peer might not
			u.Reason = ErrNoSuchActor
		}
		return nil, fmt.Errorf("actor: ask %v: %w", to, u.Reason)
	}
	return n.msg, nil
}
