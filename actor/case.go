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
// inside. It is one of three things: the actor's own, which Receive of
// several cases fills in place (owned); a Loop's, which step installs again
// after a handler that installed nothing (loop); or a set from Cases,
// the user's value, installed as it is (neither).
type multiCase struct {
	cases   []Case
	loop    bool
	owned   bool
	timeout bool  // a Cases set that holds a Timeout case
	bad     error // what is wrong with a Cases set, found when it was built
}

func (m *multiCase) accepts(n *node) bool { return match(m, n) != nil }
func (m *multiCase) run(c *Context, n *node) {
	if cs := match(m, n); cs != nil {
		cs.run(c, n)
	}
}

// Cases returns the cases as one case: a continuation built once, for one
// state of an actor, and installed by Receive (or ReceiveWithin, when it
// holds a Timeout case) as often as the actor is in that state, at no
// allocation per message. The cases are tried in order, as those of a
// Receive are; a Cases inside Cases counts as its cases.
//
// Such a set is a value like any case: it does not stay installed (a
// handler installs what comes next, the same set or another, as in the
// paper's model), and what a handler needs of the message being handled
// comes from its argument and its Context (Sender, Reply, Request), what it
// needs of the actor's state from the actor's own variables, never from
// captures made per message:
//
//	k := &counter{}
//	k.counting = actor.Cases(
//		actor.On(func(Incr) { k.v++; c.Receive(k.counting) }),
//		actor.On(func(Lock) { c.Reply(k.v); c.Receive(k.locked) }),
//	)
//	k.locked = actor.Cases(actor.On(func(Unlock) { c.Receive(k.counting) }))
//	c.Receive(k.counting)
//
// A set of no cases, or holding a nil case or a Loop, stops the actor
// that installs it with ErrBadReceive, as does a set with a Timeout case
// given to Receive (or one without, as the only case of ReceiveWithin).
func Cases(cases ...Case) Case {
	m := &multiCase{cases: make([]Case, 0, len(cases))}
	m.add(cases)
	if m.bad == nil && len(m.cases) == 0 {
		m.bad = fmt.Errorf("%w: Cases of no cases", ErrBadReceive)
	}
	return m
}

// add appends cases to a set being built, flattening the sets among them.
func (m *multiCase) add(cases []Case) {
	for i, cs := range cases {
		switch cs := cs.(type) {
		case nil:
			m.fault(fmt.Errorf("%w: case %d of Cases is nil", ErrBadReceive, i))
			continue
		case timeoutCase:
			m.timeout = true
		case *multiCase:
			if cs.loop {
				m.fault(fmt.Errorf("%w: case %d of Cases is a Loop", ErrBadReceive, i))
				continue
			}
			if cs.bad != nil {
				m.fault(cs.bad)
			}
			m.timeout = m.timeout || cs.timeout
			m.cases = append(m.cases, cs.cases...)
			continue
		}
		m.cases = append(m.cases, cs)
	}
}

func (m *multiCase) fault(err error) {
	if m.bad == nil {
		m.bad = err
	}
}

// timeoutOf returns the Timeout case of a continuation.
func timeoutOf(cont Case) Case {
	switch cs := cont.(type) {
	case timeoutCase:
		return cs
	case *multiCase:
		for _, inner := range cs.cases {
			if t := timeoutOf(inner); t != nil {
				return t
			}
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
	if u, ok := n.msg.(undeliverableReply); ok {
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
