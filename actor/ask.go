package actor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"
)

// Ask sends msg to `to` as a request and installs a continuation that waits
// for the reply: then runs with the reply, or with an error when no reply
// came within d (errors.Is(err, context.DeadlineExceeded)), the request
// reached no actor (ErrNoSuchActor, ErrNoRoute, or the Remote's reason,
// such as routing.ErrUnreachable or routing.ErrStreamBroken), or the asked
// actor's peer went away before it answered (ErrNodeDown, at once: see
// transport.Port.PeerDown). Other messages stay in the
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

// Ask sends msg to `to` from plain Go code and waits for the reply until ctx
// ends. The error wraps ctx.Err() on timeout, is ErrNoSuchActor or
// ErrNoRoute when the request reached no actor, and is ErrBlockingCall when
// called on an event loop (inside an actor use Context.Ask).
//
// The request's sender is a generated name that no actor holds: the reply
// finds the waiting call through the system's reply table (replies.go),
// and anything else sent to that name, a reply after Ask gave up included,
// becomes a dead letter.
func (s *System) Ask(ctx context.Context, to Ref, msg any) (any, error) {
	if s.group.InLoop() {
		return nil, ErrBlockingCall
	}
	if s.closing.Load() {
		return nil, ErrClosed
	}
	// The sender is a generated name no actor holds: the reply misses the
	// registry and finds w in the reply table (see unregistered).
	w := &waiter{from: s.genRef(0), ch: make(chan *node, 1)}
	for w.corr = newCorr(); !s.replies.add(w); w.corr = newCorr() {
	}
	if s.closing.Load() { // Shutdown may have failed the table before add
		if s.replies.remove(w) {
			return nil, ErrClosed
		}
		n := <-w.ch
		s.free(n)
		return nil, ErrClosed
	}
	from := Ref{s: w.from}
	if !to.on(s.peer) && !to.IsZero() {
		e := remoteEdge{kind: edgeAsk, local: from, remote: to, id: MonitorID(w.corr)}
		s.remote.add(e)
		defer s.remote.remove(e)
	}
	if s.direct != nil && !to.on(s.peer) && !to.IsZero() {
		// The request may be written on this goroutine: see directRemote.
		if err := s.direct.DeliverDirect(ctx, to, from, msg, w.corr, false); err != nil {
			s.undeliverable(to, s.newNode(msg, from, w.corr, kindUser), err)
		}
	} else {
		s.send(to, from, msg, w.corr, kindUser)
	}
	var n *node
	select {
	case n = <-w.ch:
	case <-ctx.Done():
		if s.replies.remove(w) {
			return nil, fmt.Errorf("actor: ask %v: %w", to, ctx.Err())
		}
		n = <-w.ch // the reply came at the same time
	}
	defer s.free(n)
	if n.kind == kindSignal {
		return nil, fmt.Errorf("actor: ask %v: %w", to, n.msg.(exitSignal).Reason)
	}
	if u, ok := n.msg.(undeliverableReply); ok {
		if u.Reason == nil { // every sender gives one; a peer might not
			u.Reason = ErrNoSuchActor
		}
		return nil, fmt.Errorf("actor: ask %v: %w", to, u.Reason)
	}
	return n.msg, nil
}
