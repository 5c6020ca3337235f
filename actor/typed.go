package actor

import (
	"context"
	"fmt"
	"reflect"
	"time"
)

// AskAs is System.Ask whose reply must be of type R: a reply of another
// type is an error wrapping ErrReplyType that names both types.
func AskAs[R any](ctx context.Context, s *System, to Ref, msg any) (R, error) {
	v, err := s.Ask(ctx, to, msg)
	return replyAs[R](to, v, err)
}

// AskThen is Context.Ask whose reply must be of type R: then gets the
// reply as an R, or an error (a reply of another type: one wrapping
// ErrReplyType that names both types). Like Ask, it should be the last
// statement of its step.
func AskThen[R any](c *Context, to Ref, msg any, d time.Duration, then func(reply R, err error)) {
	if then == nil {
		c.fail(fmt.Errorf("%w: AskThen needs a continuation", ErrBadReceive))
		return
	}
	c.Ask(to, msg, d, func(v any, err error) { then(replyAs[R](to, v, err)) })
}

// replyAs converts v, the reply of an Ask of to that failed with err or
// not, to R.
func replyAs[R any](to Ref, v any, err error) (R, error) {
	var zero R
	if err != nil {
		return zero, err
	}
	if r, ok := v.(R); ok {
		return r, nil
	}
	t := reflect.TypeFor[R]()
	if v == nil && t.Kind() == reflect.Interface {
		return zero, nil // a nil reply is a nil R
	}
	return zero, fmt.Errorf("%w: ask %v: got %T, want %v", ErrReplyType, to, v, t)
}

// Loop returns a continuation of cases that stays installed: after a case
// handled a message, the same cases wait for the next one unless the
// handler installed another continuation (Receive, Ask) or stopped the
// actor. It is the idiom
//
//	var h actor.Case
//	h = actor.On(func(m Msg) { ...; c.Receive(h) })
//	c.Receive(h)
//
// in one call, as free of allocations per message:
//
//	c.Receive(actor.Loop(actor.On(func(m Msg) { ... })))
//
// A Loop must be the only case of a Receive (not of a ReceiveWithin) and
// holds no Timeout case; Receive stops the actor with ErrBadReceive
// otherwise. Where a handler says what comes next, as in the paper, Cases
// is the same set as a value, installed again by the handler.
func Loop(cases ...Case) Case {
	return &multiCase{cases: append([]Case(nil), cases...), loop: true}
}

// checkLoop reports what is wrong with the cases of a Receive (within: a
// ReceiveWithin) that hold a Loop, or nil.
func checkLoop(cases []Case, within bool) error {
	for _, cs := range cases {
		l, ok := cs.(*multiCase)
		if !ok || !l.loop {
			continue
		}
		if within || len(cases) > 1 {
			return fmt.Errorf("%w: a Loop must be the only case of a Receive", ErrBadReceive)
		}
		if len(l.cases) == 0 {
			return fmt.Errorf("%w: a Loop of no cases", ErrBadReceive)
		}
		for i, inner := range l.cases {
			switch inner.(type) {
			case nil:
				return fmt.Errorf("%w: case %d of a Loop is nil", ErrBadReceive, i)
			case timeoutCase, *multiCase:
				return fmt.Errorf("%w: case %d of a Loop is a Timeout, a Loop or a Cases set", ErrBadReceive, i)
			}
		}
	}
	return nil
}
