package actor

// An actor's sends: to actors of its own peer at once, to other peers
// gathered in its outbox and handed over in runs; replies and Requests.

// outbox gathers an actor's messages to other peers: empty between
// activations.
type outbox struct {
	msgs []outbound
}

// outRun is the most messages an outbox gathers before handing them over:
// enough to take the remote's locks rarely, few enough that the writer
// that sends them starts early and works alongside the actor.
const outRun = 64

// Send sends msg to the actor to, with this actor as its sender. It never
// blocks: a message that cannot be delivered becomes a dead letter.
// Messages to an actor of this peer are pushed in runs, per partner, at
// the latest when the current activation ends (before the actor sends to
// another, or sends a signal); when the system's transport is a
// transport.BatchRemote, messages to other peers are handed to it in
// runs too, in the order sent, at the latest when the activation ends. So
// a message System.Send sends to the same actor meanwhile, without a
// sender, may arrive before them (docs/architecture.md, "What is
// ordered"), and a handler that blocks after Send holds the message until
// it returns. A thread-style actor's messages to this peer leave at once.
func (c *Context) Send(to Ref, msg any) {
	c.send(to, msg, 0, kindUser)
}

// send is System.send with the actor's own lookup cache.
func (c *Context) send(to Ref, msg any, corr uint64, kind uint8) {
	s := c.sys
	// The partner of the last send is local, and its Ref mostly the very
	// string to holds: then the peer needs no comparing.
	last := c.lastTo
	hit := last != nil && sameString(to.s, last.ref)
	if !hit && !to.on(s.peer) {
		if s.batch != nil && !to.IsZero() {
			c.sendOut(to, msg, corr, kind == kindReply) // its flush pushes the run first
			return
		}
		c.flushRun() // the run goes before any other send of the actor
		s.send(to, c.Self(), msg, corr, kind)
		return
	}
	n := c.spare
	if n == nil {
		n, _ = s.nodes.Get().(*node)
		if n == nil {
			n = new(node)
		}
	}
	// n.next stays stale: the push links it (or undeliverable frees n).
	c.spare = n.next
	n.msg, n.from, n.corr, n.kind = msg, Ref{s: c.ref}, corr, kind
	if c.opts&oThread != 0 { // a thread may block after any send: at once
		if hit && last.pushFrom(n, c.loop.Load()) {
			return
		}
		if target := s.names.load(to.Name()); target != nil && target.pushFrom(n, c.loop.Load()) {
			c.lastTo = target
			return
		}
		s.unregistered(to, n)
		return
	}
	if !hit {
		target := s.names.load(to.Name())
		if target == nil {
			// A reply to plain code's Ask, or a dead letter: after the
			// run too, so that an asker sees what was sent before.
			c.flushRun()
			s.unregistered(to, n)
			return
		}
		c.flushRun() // the run is lastTo's
		c.lastTo = target
	}
	c.queueRun(n)
}

// The run: an actor's messages to its last partner (lastTo), queued
// during the activation and pushed onto the partner's inbox at once, with
// one atomic operation and at most one wake-up (docs/architecture.md,
// "What is ordered", 6.). It is kept as a circular list reached through its oldest node,
// linked newest first as an inbox is, so that one word holds it; its
// length is in the top bits of flags.

const (
	runShift = 24
	runOne   = uint32(1) << runShift
	runMask  = ^(runOne - 1)
)

// queueRun adds n, a message to c.lastTo, to the run.
func (c *Context) queueRun(n *node) {
	if o := c.sendRun; o == nil {
		n.next = n
		c.sendRun = n
	} else {
		n.next = o.next // the newest
		o.next = n
	}
	c.flags += runOne
	if c.flags>>runShift >= outRun {
		c.flushRun()
	}
}

// flushRun pushes the run onto lastTo's inbox. It is called when the
// actor sends to another partner, before it sends a signal, joins or
// leaves a group or broadcasts to one, when the run is outRun long, when
// the activation ends and when the actor terminates: so what the actor
// sends reaches each partner in the order sent, and no message waits in
// an idle actor.
func (c *Context) flushRun() {
	oldest := c.sendRun
	if oldest == nil {
		return
	}
	c.sendRun = nil
	c.flags &^= runMask
	to, newest := c.lastTo, oldest.next
	if newest == oldest {
		if to.pushFrom(oldest, c.loop.Load()) {
			return
		}
	} else if to.pushRunFrom(newest, oldest, c.loop.Load()) {
		return
	}
	// Dead, or limits that count one message at a time: one by one, as
	// each would have gone alone.
	oldest.next = nil
	c.lastTo = nil
	ref := Ref{s: to.ref}
	for n := reverseNodes(newest); n != nil; {
		next := n.next
		n.next = nil
		c.sys.deliverLocal(ref, n)
		n = next
	}
}

// sendOut gathers a message to another peer in the actor's outbox. kind
// is kindUser or kindReply (Context.send sends no signals).
func (c *Context) sendOut(to Ref, msg any, corr uint64, reply bool) {
	o := c.out
	if o == nil {
		n := outRun
		if c.opts&oThread != 0 {
			// A thread may block in its own code after any send: its
			// messages leave one by one, at once.
			n = 1
		}
		o = &outbox{msgs: make([]outbound, 0, n)}
		c.out = o
	}
	i := len(o.msgs)
	if i == cap(o.msgs) {
		o.msgs = append(o.msgs, outbound{})
	} else {
		o.msgs = o.msgs[:i+1]
	}
	// Set field by field: a composite literal would be built aside and
	// copied.
	m := &o.msgs[i]
	m.To, m.Msg, m.Corr, m.Reply = to, msg, corr, reply
	if i+1 >= cap(o.msgs) { // outRun, or 1 for a thread
		c.flushRun() // the run goes before any other send of the actor
		c.flushOut()
	}
}

// flushOut hands the messages gathered in the outbox to the batchRemote,
// in order; a message it cannot queue becomes a dead letter (failing its
// Ask), as System.send makes it. It is called when the outbox fills, when
// an activation ends and when the actor terminates, so no message waits in
// an idle or dead actor.
func (c *Context) flushOut() {
	o := c.out
	if o == nil || len(o.msgs) == 0 {
		return
	}
	s := c.sys
	from := Ref{s: c.ref}
	for msgs := o.msgs; len(msgs) > 0; {
		n, err := s.batch.DeliverBatch(from, msgs)
		if err == nil || n >= len(msgs) {
			break
		}
		m := &msgs[n]
		kind := kindUser
		if m.Reply {
			kind = kindReply
		}
		s.undeliverable(m.To, s.newNode(m.Msg, from, m.Corr, kind), err)
		msgs = msgs[n+1:]
	}
	clear(o.msgs) // the remote keeps what it needs: drop the references
	o.msgs = o.msgs[:0]
}

// Request identifies the message being handled so that it can be answered
// later, from another step (Erlang's From in gen_server). The zero Request
// answers nobody.
type Request struct {
	from Ref
	corr uint64
}

// Sender returns who sent the request.
func (r Request) Sender() Ref { return r.from }

// Request returns the handle of the message being handled, for Respond.
func (c *Context) Request() Request {
	n := c.cur
	if n == nil || n.kind != kindUser {
		return Request{}
	}
	return Request{from: n.from, corr: n.corr}
}

// Reply answers the message being handled: it sends msg to its sender, as
// the reply to its Ask when it was asked. Without a sender (plain Go code, or
// a Timeout step) msg becomes a dead letter.
func (c *Context) Reply(msg any) { c.Respond(c.Request(), msg) }

// Respond answers req, typically from a later step than the one that
// received it: as the reply to its Ask when it was asked, as a plain message
// otherwise.
func (c *Context) Respond(req Request, msg any) {
	kind := kindUser
	if req.corr != 0 {
		kind = kindReply
	}
	c.send(req.from, msg, req.corr, kind)
}
