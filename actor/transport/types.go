package transport

import (
	"context"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Envelope is a message in transit between systems: what Port.Deliver,
// Port.DeliverBatch, Port.Bounce and Inbound.Add take. Its fields:
//
//	To    actor.Ref // the recipient
//	From  actor.Ref // zero when sent from plain Go code
//	Msg   any       // a user message, a Signal, or Undeliverable in a reply
//	Corr  uint64    // correlation ID of an Ask; 0 for none
//	Reply bool      // Msg answers the Ask with correlation ID Corr
//	Size  int       // bytes an Inbound with a Credit charges for the message
//
// It is an alias of an internal generic type, so that package actor
// handles the same type without importing this package.
type Envelope = spi.Envelope[actor.Ref]

// Outbound is one message an actor sent to an actor of another peer,
// gathered with the others its activation sends (see BatchRemote). Its
// fields:
//
//	To    actor.Ref // the recipient, an actor of another peer
//	Msg   any       // a user message or a reply (never a Signal)
//	Corr  uint64    // correlation ID of an Ask; 0 for none
//	Reply bool      // Msg answers the Ask with correlation ID Corr
type Outbound = spi.Outbound[actor.Ref]

// Remote carries messages to actors of other peers; routing implements it.
type Remote interface {
	// Deliver queues msg for the actor to of another peer, with the
	// fields of an Envelope as arguments: from is an actor of this peer
	// or the zero Ref, corr and reply are Envelope.Corr and Reply. (A
	// by-value Envelope would be built and then copied for the call,
	// which costs a store-forwarding stall per message.) It is called on
	// event loops and must never block; an error makes the message a
	// dead letter with that reason (and fails the Ask that sent it).
	Deliver(to, from actor.Ref, msg any, corr uint64, reply bool) error
}

// DirectRemote is a Remote that can also write a message on the calling
// goroutine. System.Ask uses it for a request to another peer: its caller
// is plain Go code that waits for the reply anyway, and writing the request
// itself saves a hand-off to another goroutine (a wake-up of another
// thread, a large part of a round trip's latency).
type DirectRemote interface {
	Remote
	// DeliverDirect does what Deliver does, but may write msg to the
	// network before it returns, waiting for the write no longer than
	// ctx's deadline. It is never called on an event loop.
	DeliverDirect(ctx context.Context, to, from actor.Ref, msg any, corr uint64, reply bool) error
}

// BatchRemote is a Remote that also takes many messages of one sender at
// once. When the system's Remote implements it, an actor's messages to
// other peers are gathered while its activation runs and handed over in
// runs (at the latest when the activation ends, and before the actor
// terminates), so that the remote takes its locks once per run rather than
// once per message.
type BatchRemote interface {
	Remote
	// DeliverBatch queues msgs, all sent by from (an actor of this peer),
	// in order, as Deliver would each of them. It stops at the first
	// message it cannot queue and returns how many it queued and why the
	// next failed (the caller makes that message a dead letter and hands
	// the rest over again); all were queued when the error is nil. Like
	// Deliver, it must never block.
	DeliverBatch(from actor.Ref, msgs []Outbound) (int, error)
}

// GroupTransport carries group messages between peers (routing/groups
// implements it on GossipSub). Its methods are called on event loops and must not
// block on the network.
type GroupTransport interface {
	// JoinGroup is called when the first local actor joins group.
	JoinGroup(group string) error
	// LeaveGroup is called when the last local actor left group.
	LeaveGroup(group string)
	// PublishGroup sends msg from `from` to every member of group on every
	// peer; the transport hands it back to this system's members too, with
	// Port.DeliverGroup.
	PublishGroup(group string, from actor.Ref, msg any) error
	// AnnounceGroup tells the other peers that a local member joined
	// (joined true) or left the group; they report it with
	// Port.DeliverPresence.
	AnnounceGroup(group string, member actor.Ref, joined bool)
}

// Signal is a system message between actors: links, monitors and exit
// signals. Signals are handled by the runtime, never by cases; a Remote
// carries them between peers (as the Msg of an Envelope). The types below
// are the only Signals.
type Signal = spi.Signal

// LinkSignal asks its receiver to link to the sender.
type LinkSignal = spi.LinkSignal

// UnlinkSignal removes the link between sender and receiver.
type UnlinkSignal = spi.UnlinkSignal

// ExitSignal tells its receiver that the sender stopped with Reason (when
// Linked) or asks it to stop; Kill makes it untrappable (with
// actor.ErrKilled if Reason is nil). Fields: Reason error, Linked bool,
// Kill bool.
type ExitSignal = spi.ExitSignal

// MonitorSignal asks its receiver to report its exit to the sender. Field:
// ID actor.MonitorID, numbered by the watcher's system.
type MonitorSignal = spi.MonitorSignal[actor.MonitorID]

// DemonitorSignal cancels a MonitorSignal. Field: ID actor.MonitorID.
type DemonitorSignal = spi.DemonitorSignal[actor.MonitorID]

// DownSignal reports to a watcher that the sender stopped. Fields: ID
// actor.MonitorID (from the watcher's MonitorSignal), Reason error (nil
// for a normal exit).
type DownSignal = spi.DownSignal[actor.MonitorID]

// Undeliverable answers an Ask whose request reached no actor (as the Msg
// of a reply); the asker sees Reason as its error. Fields: To actor.Ref
// (the actor the request was sent to; may be zero when another peer
// answered), Reason error (e.g. actor.ErrNoSuchActor or actor.ErrNodeDown).
type Undeliverable = spi.Undeliverable[actor.Ref]
