package transport

import (
	"context"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Inbound gathers messages that arrived from another peer and hands them to
// their local actors together, in order, as calling Port.Deliver for each
// would: consecutive messages for the same actor are pushed onto its inbox
// with one atomic operation and wake it at most once. A stream reader owns
// one, reuses it for every batch and closes it when the stream ends; it is
// not safe for concurrent use.
type Inbound struct{ f spi.Inbound[actor.Ref] }

// NewInbound returns an empty Inbound for messages to the system's actors.
// It waits until NewSystem has returned (see Factory).
func (p *Port) NewInbound() *Inbound {
	p.wait()
	return &Inbound{f: hooks.NewInbound(p.s)}
}

// SetCredit makes in charge the Size of every message added to c, until
// its actor handled it (see Credit). Call it before the first Add.
func (in *Inbound) SetCredit(c *Credit) { in.f.SetCredit(&c.c) }

// Add queues the message of e for its actor; Flush hands it over. e is not
// retained.
func (in *Inbound) Add(e *Envelope) { in.f.Add(*e) }

// Len returns how many messages were added since the last Flush.
func (in *Inbound) Len() int { return in.f.Len() }

// Flush hands the messages added to their actors, in order; a message for
// an unknown actor becomes a dead letter (and fails its Ask).
func (in *Inbound) Flush() { in.f.Flush() }

// Close flushes what was added and gives back the memory the Inbound
// holds for later messages. The Inbound must not be used afterwards.
func (in *Inbound) Close() { in.f.Close() }

// Credit counts the bytes of the messages from one peer that a transport
// handed to the system's actors and that they have not handled yet
// (waiting in a mailbox, or saved for a later receive). An Inbound with a
// Credit (SetCredit) charges each message's Envelope.Size to it; the
// message gives it back once its actor handled it, or once it became a
// dead letter. The transport reads Held to pause a peer that is over its
// budget and WaitLow to resume. Safe for concurrent use.
type Credit struct{ c spi.Credit }

// NewCredit returns a Credit whose WaitLow returns once at most low bytes
// are held.
func NewCredit(low int64) *Credit {
	c := new(Credit)
	c.c.Init(low)
	return c
}

// Held returns the bytes charged and not given back yet.
func (c *Credit) Held() int64 { return c.c.Held() }

// WaitLow waits until at most the Credit's low mark is held, or ctx ends.
func (c *Credit) WaitLow(ctx context.Context) error { return c.c.WaitLow(ctx) }
