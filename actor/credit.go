package actor

import (
	"context"
	"sync"
	"sync/atomic"
)

// Credit counts the bytes of the messages from one peer that a transport
// handed to this system's actors and that they have not handled yet
// (waiting in a mailbox, or saved for a later receive). An Inbound with a
// Credit (SetCredit) charges each message's Envelope.Size to it; the
// message's node gives it back once its actor handled it, or once it
// became a dead letter. The transport reads Held to pause a peer that is
// over its budget and WaitLow to resume. Safe for concurrent use.
type Credit struct {
	held    atomic.Int64
	low     int64
	waiters atomic.Int32
	mu      sync.Mutex    // guards ch
	ch      chan struct{} // closed when held falls to low; nil when nobody waits
}

// NewCredit returns a Credit whose WaitLow returns once at most low bytes
// are held.
func NewCredit(low int64) *Credit { return &Credit{low: low} }

// Held returns the bytes charged and not given back yet.
func (c *Credit) Held() int64 { return c.held.Load() }

// WaitLow waits until at most the Credit's low mark is held, or ctx ends.
func (c *Credit) WaitLow(ctx context.Context) error {
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	c.mu.Lock()
	if c.held.Load() <= c.low {
		c.mu.Unlock()
		return nil
	}
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	ch := c.ch
	c.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Credit) charge(n int64) { c.held.Add(n) }

// release gives back n bytes and wakes the waiters when that brought the
// held bytes to the low mark.
func (c *Credit) release(n int64) {
	if c.held.Add(-n) > c.low || c.waiters.Load() == 0 {
		return
	}
	c.mu.Lock()
	if c.ch != nil && c.held.Load() <= c.low {
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}

// mailboxAcct is what an actor's mailbox holds, for the actors that have
// a WithMailboxLimit or got messages charged to a Credit: created before
// the first message it counts, then never replaced.
type mailboxAcct struct {
	limit int32        // the most user messages the mailbox holds; 0: no limit
	msgs  atomic.Int32 // user messages counted against limit (acctMsg)
	bytes atomic.Int64 // bytes of user messages charged to a Credit (acctBytes)
}

// acct returns c's mailboxAcct, creating it if needed. Safe for
// concurrent use.
func (c *Context) acctOrNew() *mailboxAcct {
	if a := c.acct.Load(); a != nil {
		return a
	}
	c.acct.CompareAndSwap(nil, &mailboxAcct{})
	return c.acct.Load()
}

// admit counts n, a message for c, against c's mailbox limits, and
// reports false when it is over one of them: n is then not counted.
func (c *Context) admit(a *mailboxAcct, n *node) bool {
	if n.kind != kindUser {
		return true // replies and signals are never refused
	}
	if a.limit > 0 {
		if a.msgs.Add(1) > a.limit {
			a.msgs.Add(-1)
			return false
		}
		n.acct |= acctMsg
	}
	if n.size != 0 { // charged to a Credit
		// One message is always taken, however large (its transport's
		// maximum frame bounds it).
		if now := a.bytes.Add(int64(n.size)); now > c.sys.cfg.remoteBacklog && now > int64(n.size) {
			a.bytes.Add(-int64(n.size))
			if n.acct&acctMsg != 0 {
				a.msgs.Add(-1)
			}
			n.acct = 0
			return false
		}
		n.acct |= acctBytes
	}
	return true
}

// admitRun counts the user messages of a run of nodes from another peer,
// linked from first to last, against c's backlog of bytes at once, and
// reports false, having counted nothing, when c has a message limit or
// the run would take it over its backlog: the nodes must then be pushed
// one by one.
func (c *Context) admitRun(first, last *node) bool {
	a := c.acctOrNew()
	if a.limit > 0 {
		return false
	}
	var sum int64
	for n := first; ; n = n.next {
		if n.kind == kindUser && n.size != 0 {
			sum += int64(n.size)
			n.acct = acctBytes
		}
		if n == last {
			break
		}
	}
	if a.bytes.Add(sum) > c.sys.cfg.remoteBacklog {
		a.bytes.Add(-sum)
		for n := first; ; n = n.next {
			n.acct = 0
			if n == last {
				break
			}
		}
		return false
	}
	return true
}

// overflow makes n, which c's mailbox refused, a dead letter.
func (c *Context) overflow(n *node) {
	c.sys.mailboxFull.Add(1)
	c.sys.undeliverable(c.Self(), n, ErrMailboxFull)
}
