package actor

import (
	"fmt"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Delivery: sending from plain code and from transports, nodes made and
// freed, and what becomes a dead letter.

// Send sends msg to the actor to from plain Go code (the message has no
// sender). It never blocks.
func (s *System) Send(to Ref, msg any) { s.send(to, Ref{}, msg, 0, kindUser) }

// The node pool holds runs of free nodes linked through next: an
// activation gives back all the nodes it handled at once. Remote messages
// take their nodes from blocks instead (nodeblock.go).

func (s *System) newNode(msg any, from Ref, corr uint64, kind uint8) *node {
	n, _ := s.nodes.Get().(*node)
	if n == nil {
		n = new(node)
	} else if n.next != nil {
		s.nodes.Put(n.next)
		n.next = nil
	}
	n.msg, n.from, n.corr, n.kind = msg, from, corr, kind
	return n
}

// free recycles a node that nothing refers to any more.
func (s *System) free(n *node) {
	if c := n.charged(); c != nil {
		c.Release(int64(n.size))
	}
	if b := n.block(); b != nil {
		n.msg, n.acct, n.size = nil, 0, 0
		s.releaseBlockNodes(b, 1)
		return
	}
	*n = node{}
	s.nodes.Put(n)
}

// Deliver hands a message that arrived from another peer to its local
// actor. Remotes call it; a message for an unknown actor becomes a dead
// letter (and fails its Ask).
func (p *port) Deliver(e envelope) {
	s := p.s
	s.deliverLocal(e.To, s.newNode(e.Msg, e.From, e.Corr, envKind(&e)))
}

// envKind is the mailbox kind of an envelope's message.
func envKind(e *envelope) uint8 {
	switch {
	case e.Reply:
		return kindReply
	case isSignal(e.Msg):
		return kindSignal
	}
	return kindUser
}

// DeliverBatch hands messages that arrived from another peer to their
// local actors, in order, as calling Deliver for each would: consecutive
// envelopes for the same actor are pushed onto its inbox with one atomic
// operation and wake it at most once. Remotes call it when they decoded
// several messages at once. es is not retained.
func (p *port) DeliverBatch(es []envelope) {
	s := p.s
	in := s.port.NewInbound()
	for i := range es {
		in.Add(&es[i])
	}
	in.Close()
}

func isSignal(m any) bool {
	_, ok := m.(spi.Signal)
	return ok
}

// send routes a message: to a local actor's inbox, or to the Remote.
func (s *System) send(to, from Ref, msg any, corr uint64, kind uint8) {
	if to.on(s.peer) {
		s.deliverLocal(to, s.newNode(msg, from, corr, kind))
		return
	}
	var err error
	switch {
	case to.IsZero():
		err = ErrNoSuchActor
	case s.cfg.remote == nil:
		err = ErrNoRoute
	default:
		err = s.cfg.remote.Deliver(to, from, msg, corr, kind == kindReply)
	}
	if err != nil {
		s.undeliverable(to, s.newNode(msg, from, corr, kind), err)
	}
}

// Bounce hands back a message that an actor of this system (or plain code)
// sent to another peer, and that the Remote took but then could not
// deliver, for reason: an Ask request is answered with Undeliverable, a
// monitor request with Down and a link request with an exit signal (both
// with reason), as when the target does not exist; any other message
// becomes a dead letter. Remotes call it. Safe for concurrent use.
func (p *port) Bounce(e envelope, reason error) {
	s := p.s
	s.undeliverable(e.To, s.newNode(e.Msg, e.From, e.Corr, envKind(&e)), reason)
}

func (s *System) deliverLocal(to Ref, n *node) {
	if c := s.names.load(to.Name()); c != nil && c.push(n) {
		return
	}
	s.unregistered(to, n)
}

// undeliverable disposes of a message that reached no actor: user messages
// and replies become dead letters (an Ask request is answered with
// Undeliverable), a monitor or link request is answered as if the target
// had just died, a Down or exit signal refused on its way to another peer
// becomes a dead letter (as a Down or an Exit). It frees n.
func (s *System) undeliverable(to Ref, n *node, reason error) {
	defer s.free(n)
	switch n.kind {
	case kindTimeout:
	case kindSignal:
		switch sig := n.msg.(type) {
		case monitorSignal:
			s.send(n.from, to, downSignal{ID: sig.ID, Reason: reason}, 0, kindSignal)
		case linkSignal:
			s.send(n.from, to, exitSignal{Reason: reason, Linked: true}, 0, kindSignal)
		case downSignal:
			// Refused on its way to another peer (a full link, say): a dead
			// letter, as a message would be. One for an actor of this peer
			// that is gone is dropped, as in Erlang.
			if !to.on(s.peer) {
				s.deadLetter(DeadLetter{To: to, From: n.from, Msg: Down{Ref: n.from, ID: sig.ID, Reason: sig.Reason}, Reason: reason})
			}
		case exitSignal:
			if !to.on(s.peer) {
				s.deadLetter(DeadLetter{To: to, From: n.from, Msg: Exit{From: n.from, Reason: sig.Reason}, Reason: reason})
			}
		}
	default:
		s.deadLetter(DeadLetter{To: to, From: n.from, Msg: n.msg, Reason: reason})
		if n.kind == kindUser && n.corr != 0 && !n.from.IsZero() {
			s.send(n.from, to, undeliverableReply{To: to, Reason: reason}, n.corr, kindReply)
		}
	}
}

// deadLetter counts and records d and hands it to the WithDeadLetterHook hook. A
// panic in the hook is logged and goes no further: its callers are
// freeing nodes and giving back credit, which must not stop half-way.
func (s *System) deadLetter(d DeadLetter) {
	s.deadLetters.Add(1)
	s.deadLog.add(d)
	f := s.cfg.deadLetter
	if f == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			s.cfg.logger.Error("actor: dead-letter hook panicked", "panic", fmt.Sprint(v), "to", d.To.String())
		}
	}()
	f(d)
}
