package actor

import (
	"context"
	"fmt"
	"time"
)

// Ask sends msg to `to` as a request and installs a continuation that waits
// for the reply: then runs with the reply, or with an error when no reply
// came within d (errors.Is(err, context.DeadlineExceeded)) or the request
// reached no actor (ErrNoSuchActor, ErrNoRoute). Other messages stay in the
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
	corr := c.sys.ids.Add(1)
	c.send(to, msg, corr, kindUser)
	c.ReceiveWithin(d, &askCase{corr: corr, then: then}, Timeout(func() {
		then(nil, fmt.Errorf("actor: ask %v: no reply within %v: %w", to, d, context.DeadlineExceeded))
	}))
}

type askResult struct {
	v   any
	err error
}

// Ask sends msg to `to` from plain Go code and waits for the reply until ctx
// ends. The error wraps ctx.Err() on timeout, is ErrNoSuchActor or
// ErrNoRoute when the request reached no actor, and is ErrBlockingCall when
// called on an event loop (inside an actor use Context.Ask).
func (s *System) Ask(ctx context.Context, to Ref, msg any) (any, error) {
	if s.group.InLoop() {
		return nil, ErrBlockingCall
	}
	res := make(chan askResult, 1)
	ref, err := s.Spawn("", func(c *Context) {
		corr := s.ids.Add(1)
		s.send(to, c.Self(), msg, corr, kindUser)
		c.Receive(&askCase{corr: corr, then: func(v any, err error) { res <- askResult{v, err} }})
	})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		s.send(ref, Ref{}, ExitSignal{Kill: true, Reason: ctx.Err()}, 0, kindSignal)
		return nil, fmt.Errorf("actor: ask %v: %w", to, ctx.Err())
	}
}
