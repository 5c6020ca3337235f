package actor

import "context"

// Envelope is a message in transit between systems: what a Remote carries
// (as Remote.Deliver's arguments) and what Port.Deliver accepts.
type Envelope struct {
	To    Ref    // the recipient
	From  Ref    // zero when sent from plain Go code
	Msg   any    // a user message, a Signal, or Undeliverable in a reply
	Corr  uint64 // correlation ID of an Ask; 0 for none
	Reply bool   // Msg answers the Ask with correlation ID Corr
	Size  int    // bytes an Inbound with a Credit charges for the message (see Credit)
}

// Remote carries messages to actors of other peers; routing implements it.
type Remote interface {
	// Deliver queues msg for the actor to of another peer, with the
	// fields of an Envelope as arguments: from is an actor of this peer
	// or the zero Ref, corr and reply are Envelope.Corr and Reply. (A
	// by-value Envelope would be built and then copied for the call,
	// which costs a store-forwarding stall per message.) It is called on
	// event loops and must never block; an error makes the message a
	// dead letter with that reason (and fails the Ask that sent it).
	Deliver(to, from Ref, msg any, corr uint64, reply bool) error
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
	DeliverDirect(ctx context.Context, to, from Ref, msg any, corr uint64, reply bool) error
}

// Outbound is one message an actor sent to an actor of another peer,
// gathered with the others its activation sends (see BatchRemote).
type Outbound struct {
	To    Ref    // the recipient, an actor of another peer
	Msg   any    // a user message or a reply (never a Signal)
	Corr  uint64 // correlation ID of an Ask; 0 for none
	Reply bool   // Msg answers the Ask with correlation ID Corr
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
	DeliverBatch(from Ref, msgs []Outbound) (int, error)
}
