package transport

import (
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/eventloop"
	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// hooks are package actor's side of the SPI, set in actor's init (which
// runs before this package's variables are initialized: it imports actor).
var hooks = spi.Actor.(*spi.Hooks[actor.System, actor.Ref, actor.Option, actor.SpawnOption])

// Port is the actor system as a transport sees it: how messages, replies,
// refusals and news of peers and groups from other peers come in. A
// transport gets it once, from NewSystem, when its factory builds it. Its
// methods are safe for concurrent use.
//
// A transport also implements Remote (and optionally BatchRemote and
// DirectRemote) for what goes out, and GroupTransport for groups; it
// carries Envelopes, and the Signal types between peers.
type Port struct {
	s     *actor.System
	ready <-chan struct{} // closed once NewSystem returned (see Factory)
}

// wait returns once NewSystem has returned: the methods that may answer
// another peer through the system's Remote call it, so that no stream
// handler a factory installed sees the system before it holds its
// transport (a data race, and a reply lost as actor.ErrNoRoute).
func (p *Port) wait() {
	select {
	case <-p.ready:
	default:
		<-p.ready
	}
}

// Peer returns the ID of the peer the system runs on (as System.Peer).
func (p *Port) Peer() string { return p.s.Peer() }

// System returns the system the port belongs to.
func (p *Port) System() *actor.System { return p.s }

// Deliver hands a message that arrived from another peer to its local
// actor. A message for an unknown actor becomes a dead letter (and fails
// its Ask).
func (p *Port) Deliver(e Envelope) {
	p.wait()
	hooks.Deliver(p.s, e)
}

// DeliverBatch hands messages that arrived from another peer to their
// local actors, in order, as calling Deliver for each would: consecutive
// envelopes for the same actor are pushed onto its inbox with one atomic
// operation and wake it at most once. es is not retained.
func (p *Port) DeliverBatch(es []Envelope) {
	p.wait()
	hooks.DeliverBatch(p.s, es)
}

// Bounce hands back a message that an actor of this system (or plain code)
// sent to another peer, and that the Remote took but then could not
// deliver, for reason: an Ask request is answered with Undeliverable, a
// monitor request with Down and a link request with an exit signal (both
// with reason), as when the target does not exist; any other message
// becomes a dead letter.
func (p *Port) Bounce(e Envelope, reason error) {
	p.wait()
	hooks.Bounce(p.s, e, reason)
}

// PeerDown tells the system that a peer went away (disconnected, or came
// back as a new incarnation): every local monitor of an actor on it receives
// Down with ErrNodeDown, every local actor linked to one receives an exit
// signal with ErrNodeDown, every Ask waiting for a reply from one of its
// actors fails with ErrNodeDown (as an Erlang call fails on nodedown, at
// once rather than at its timeout), and the monitors its actors held on
// local actors are dropped (as Erlang drops them when a node goes down), so
// that they neither pile up nor send Downs to a peer that is gone.
func (p *Port) PeerDown(peer string) {
	p.wait()
	hooks.PeerDown(p.s, peer)
}

// ShedSaved makes dead letters, with a reason wrapping actor.ErrMailboxFull,
// of the user messages charged to cr that actors saved for a later receive
// (each actor drops its own, on its loop; an Ask among them fails). A
// transport calls it for a peer that stayed paused at its budget: the
// actors holding it may wait for messages behind the pause, which would
// never come. Messages in mailboxes stay: their actors handle them. It
// returns how many actors hold some of cr; it walks every actor.
func (p *Port) ShedSaved(cr *Credit) int {
	p.wait()
	return hooks.ShedSaved(p.s, &cr.c)
}

// AcceptsUnknownTypes reports whether a message of a type this node does
// not know, from another peer, may go to the local actor to: only when it
// was spawned with actor.AcceptUnknownTypes (a missing actor does not: one
// spawned under its name before the message is handed over may not take
// them).
func (p *Port) AcceptsUnknownTypes(to actor.Ref) bool { return hooks.AcceptsUnknownTypes(p.s, to) }

// RemoteEdges returns how many monitors (either way), links and pending
// Asks tie the system's actors to actors on peer: what PeerDown would fire
// or drop. A node keeps its connection to a peer with edges from being
// trimmed by its connection manager.
func (p *Port) RemoteEdges(peer string) int { return hooks.RemoteEdges(p.s, peer) }

// RemoteWatches returns the monitors and links that actors of other peers
// hold on the system's actors, and its actors' links to them: what
// WithRemoteWatchLimit and WithRemoteWatchTotal cap.
func (p *Port) RemoteWatches() int { return hooks.RemoteWatches(p.s) }

// Loops returns the system's event loops (for their counters, such as the
// watchdog's replacements).
func (p *Port) Loops() *eventloop.Group { return hooks.Loops(p.s) }

// DeliverPresence records that member, an actor of another peer, joined
// (joined true) or left group, and tells the local members when that is
// news. It reports whether it was. The group transport calls it.
func (p *Port) DeliverPresence(group string, member actor.Ref, joined bool) bool {
	return hooks.DeliverPresence(p.s, group, member, joined)
}

// PeerLeftGroups reports as Left every group member of peer: the group
// transport calls it when the peer disconnects.
func (p *Port) PeerLeftGroups(peer string) { hooks.PeerLeftGroups(p.s, peer) }

// ForgetGroupMembers forgets the members of group on other peers unless
// the group has a local member again: the group transport calls it when it
// stops listening to the group, after its last local member left, because
// it would not hear of them leaving. (A member that joins later learns of
// them again, as the transport announces them anew.)
func (p *Port) ForgetGroupMembers(group string) { hooks.ForgetGroupMembers(p.s, group) }

// RemoteMembers returns, for every group, the members on other peers that
// this system knows of (see DeliverPresence).
func (p *Port) RemoteMembers() map[string][]actor.Ref { return hooks.RemoteMembers(p.s) }

// DeliverGroup hands a group message to every local member and returns how
// many there were. The group transport calls it.
func (p *Port) DeliverGroup(group string, from actor.Ref, msg any) int {
	return hooks.DeliverGroup(p.s, group, from, msg)
}
