package actor

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// A transport's Credit (transport.Credit wraps a *spi.Credit) counts the
// bytes of the messages from one peer that it handed to this system's
// actors and that they have not handled yet (waiting in a mailbox, or
// saved for a later receive). An inbound with a Credit charges each
// message's Envelope.Size to it; the message's node gives it back once
// its actor handled it, or once it became a dead letter.

// mailboxAcct is what an actor's mailbox holds, for the actors that have
// a WithMailboxLimit or got messages charged to a Credit: created before
// the first message it counts, then never replaced.
type mailboxAcct struct {
	limit int32        // the most user messages the mailbox holds; 0: no limit
	msgs  atomic.Int32 // user messages counted against limit (acctMsg)
	// The bytes of user messages charged to each Credit (acctBytes),
	// against the actor's backlog per peer: for the first Credit met
	// (most actors hear from one peer), without a lock; for the others,
	// in held. A peer that reconnects gets a new Credit, which then goes
	// to the map: correct, only slower.
	first     atomic.Pointer[spi.Credit]
	firstHeld atomic.Int64
	mu        sync.Mutex            // guards held
	held      map[*spi.Credit]int64 // no zero entries
}

// hold counts n more bytes of cr's against backlog, and reports false,
// having counted nothing, when that would take cr over it. When one
// message, n is taken whenever nothing of cr's is held, however large
// (its transport's maximum frame bounds it).
func (a *mailboxAcct) hold(cr *spi.Credit, n, backlog int64, one bool) bool {
	if a.first.Load() == nil {
		a.first.CompareAndSwap(nil, cr) // a racing hold may win, maybe for cr too
	}
	if a.first.Load() == cr {
		if now := a.firstHeld.Add(n); now > backlog && (!one || now > n) {
			a.firstHeld.Add(-n)
			return false
		}
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.held[cr] + n
	if now > backlog && (!one || now > n) {
		return false
	}
	if a.held == nil {
		a.held = make(map[*spi.Credit]int64)
	}
	a.held[cr] = now
	return true
}

// unhold gives back n bytes of cr's.
func (a *mailboxAcct) unhold(cr *spi.Credit, n int64) {
	if a.first.Load() == cr {
		a.firstHeld.Add(-n)
		return
	}
	a.mu.Lock()
	if now := a.held[cr] - n; now > 0 {
		a.held[cr] = now
	} else {
		delete(a.held, cr)
	}
	a.mu.Unlock()
}

// holds reports whether a counts bytes of cr's.
func (a *mailboxAcct) holds(cr *spi.Credit) bool {
	if a.first.Load() == cr {
		return a.firstHeld.Load() > 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[cr] > 0
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
		if !a.hold(n.charged(), int64(n.size), c.sys.cfg.remoteBacklog, true) {
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

// unadmit gives back what admit counted of n against a (nil: nothing was
// counted) when c's inbox refused n: c is dead, and n goes on to another
// actor (a new one of the same name) or becomes a dead letter, neither of
// which may give back c's counts.
func (c *Context) unadmit(a *mailboxAcct, n *node) {
	if a != nil && n.acct&acctMsg != 0 {
		a.msgs.Add(-1)
	}
	if a != nil && n.acct&acctBytes != 0 {
		a.unhold(n.charged(), int64(n.size))
	}
	n.acct = 0
}

// admitRun counts the user messages of a run of nodes from another peer,
// linked from first to last and all charged to one Credit, against c's
// backlog for that Credit at once, and reports false, having counted
// nothing, when c has a message limit or the run would take it over its
// backlog: the nodes must then be pushed one by one.
func (c *Context) admitRun(first, last *node) bool {
	a := c.acctOrNew()
	if a.limit > 0 {
		return false
	}
	var sum int64
	var cr *spi.Credit
	for n := first; ; n = n.next {
		if n.kind == kindUser && n.size != 0 {
			sum += int64(n.size)
			n.acct = acctBytes
			cr = n.charged()
		}
		if n == last {
			break
		}
	}
	if sum == 0 || a.hold(cr, sum, c.sys.cfg.remoteBacklog, false) {
		return true
	}
	for n := first; ; n = n.next {
		n.acct = 0
		if n == last {
			break
		}
	}
	return false
}

// overflow makes n, which c's mailbox refused, a dead letter.
func (c *Context) overflow(n *node) {
	c.sys.mailboxFull.Add(1)
	c.sys.undeliverable(c.Self(), n, ErrMailboxFull)
}

// errShed is the dead-letter reason of a message ShedSaved dropped.
var errShed = fmt.Errorf("%w: saved for a later receive while its peer stayed paused at its budget", ErrMailboxFull)

// shedSignal asks an actor to drop its saved messages charged to credit.
type shedSignal struct{ credit *spi.Credit }

// ShedSaved makes dead letters, with a reason wrapping ErrMailboxFull, of
// the user messages charged to cr that actors saved for a later receive
// (each actor drops its own, on its loop; an Ask among them fails). A
// transport calls it for a peer that stayed paused at its budget: the
// actors holding it may wait for messages behind the pause, which would
// never come. Messages in mailboxes stay: their actors handle them. It
// returns how many actors hold some of cr; it walks every actor.
func (p *port) ShedSaved(cr *spi.Credit) int {
	s := p.s
	k := 0
	for _, c := range s.names.all() {
		if a := c.acct.Load(); a == nil || !a.holds(cr) {
			continue
		}
		k++
		if n := s.newNode(shedSignal{cr}, Ref{}, 0, kindSignal); !c.push(n) {
			s.free(n)
		}
	}
	return k
}

// shed drops c's saved messages charged to cr and counted in its backlog
// (see ShedSaved); what signals became (Down, Exit) stays: those are
// bounded by transport.WithRemoteWatchLimit, not by the backlog.
func (c *Context) shed(cr *spi.Credit) {
	a := c.acct.Load()
	n := c.saved.takeAll()
	for n != nil {
		next := n.next
		n.next = nil
		if n.acct&acctBytes == 0 || n.charged() != cr {
			c.saved.append(n)
			n = next
			continue
		}
		a.unhold(cr, int64(n.size))
		if n.acct&acctMsg != 0 {
			a.msgs.Add(-1)
		}
		n.acct = 0
		c.sys.mailboxFull.Add(1)
		c.sys.undeliverable(c.Self(), n, errShed)
		n = next
	}
}
