package actor

import "fmt"

// Case is one alternative of a Receive: it says which messages it accepts
// and what runs for them. Build cases with On, OnWhen, Any and Timeout.
type Case interface {
	accepts(n *node) bool
	run(c *Context, n *node)
}

type onCase[T any] struct{ f func(T) }

func (o onCase[T]) accepts(n *node) bool {
	if n.kind != kindUser {
		return false
	}
	_, ok := n.msg.(T)
	return ok
}

func (o onCase[T]) run(_ *Context, n *node) { o.f(n.msg.(T)) }

// On returns a case that accepts every message of type T (by exact dynamic
// type, or any type implementing T when T is an interface) and calls f with
// it.
func On[T any](f func(T)) Case {
	if f == nil {
		return nil
	}
	return onCase[T]{f}
}

type onWhenCase[T any] struct {
	guard func(T) bool
	f     func(T)
}

func (o *onWhenCase[T]) accepts(n *node) bool {
	if n.kind != kindUser {
		return false
	}
	m, ok := n.msg.(T)
	return ok && o.guard(m)
}

func (o *onWhenCase[T]) run(_ *Context, n *node) { o.f(n.msg.(T)) }

// OnWhen returns a case that accepts messages of type T for which guard
// returns true, and calls f with them. The guard runs on the actor's loop,
// possibly several times for one message, and must not have side effects.
func OnWhen[T any](guard func(T) bool, f func(T)) Case {
	if guard == nil || f == nil {
		return nil
	}
	return &onWhenCase[T]{guard, f}
}

type anyCase struct{ f func(any) }

func (a anyCase) accepts(n *node) bool    { return n.kind == kindUser }
func (a anyCase) run(_ *Context, n *node) { a.f(n.msg) }

// Any returns a case that accepts every message.
func Any(f func(msg any)) Case {
	if f == nil {
		return nil
	}
	return anyCase{f}
}

type timeoutCase struct{ f func() }

func (timeoutCase) accepts(*node) bool        { return false }
func (t timeoutCase) run(_ *Context, _ *node) { t.f() }

// Timeout returns the case that ReceiveWithin runs when no message matched
// within its duration. It accepts no message.
func Timeout(f func()) Case {
	if f == nil {
		return nil
	}
	return timeoutCase{f}
}

// multiCase is a continuation of several cases, which match looks
// inside; a Loop's when loop is set (step installs it again after a
// handler that installed nothing).
type multiCase struct {
	cases []Case
	loop  bool
}

func (m *multiCase) accepts(n *node) bool { return match(m, n) != nil }
func (m *multiCase) run(c *Context, n *node) {
	if cs := match(m, n); cs != nil {
		cs.run(c, n)
	}
}

// timeoutOf returns the Timeout case of a continuation.
func timeoutOf(cont Case) Case {
	cases := []Case{cont}
	if m, ok := cont.(*multiCase); ok {
		cases = m.cases
	}
	for _, cs := range cases {
		if _, ok := cs.(timeoutCase); ok {
			return cs
		}
	}
	return nil
}

// startCase holds the behavior until the first activation runs it.
type startCase struct{ b Behavior }

func (startCase) accepts(*node) bool  { return false }
func (startCase) run(*Context, *node) {}

// askCase accepts the reply to one Ask.
type askCase struct {
	corr uint64
	to   Ref // set when the request went to another peer: the Ask is in the system's remote index
	then func(reply any, err error)
}

func (a *askCase) accepts(n *node) bool { return n.kind == kindReply && n.corr == a.corr }

func (a *askCase) run(c *Context, n *node) {
	a.done(c)
	if u, ok := n.msg.(Undeliverable); ok {
		if u.Reason == nil { // every sender gives one; a peer might not
			u.Reason = ErrNoSuchActor
		}
		a.then(nil, fmt.Errorf("actor: ask %v: %w", u.To, u.Reason))
		return
	}
	a.then(n.msg, nil)
}

// done forgets a remote Ask in the system's remote index, once it has its
// reply or gave up: the peer going away afterwards concerns it no more.
func (a *askCase) done(c *Context) {
	if a.to.IsZero() {
		return
	}
	c.trackRemote(edgeAsk, a.to, MonitorID(a.corr), false)
	if c.ext != nil && c.ext.ask == a {
		c.ext.ask = nil
	}
	a.to = Ref{}
}
