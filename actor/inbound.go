package actor

import "github.com/troupe-mesh/troupe/actor/internal/spi"

// inbound (transport.Inbound) gathers messages that arrived from another peer and hands them to
// their local actors together, in order, as calling port.Deliver for
// each would: consecutive messages for the same actor are pushed onto its
// inbox with one atomic operation and wake it at most once. A stream
// reader owns one, reuses it for every batch and closes it when the stream
// ends; it is not safe for concurrent use.
type inbound struct {
	s    *System
	blk  *nodeBlock   // where the next nodes come from
	used int          // nodes of blk handed out
	runs []inboundRun // the messages added since the last Flush
	n    int
	// credit is charged for the messages added, pending bytes of them
	// at the next Flush; nil: nothing is charged.
	credit  *spi.Credit
	pending int64
}

// SetCredit makes in charge the Size of every message added to c, until
// its actor handled it (see Credit). Call it before the first Add.
func (in *inbound) SetCredit(c *spi.Credit) { in.credit = c }

// inboundRun is consecutive messages for one actor, linked newest first
// from first to last. The last run's first is set only when the run ends
// (by Flush, or when another run starts): until then its newest node is
// the one Add handed out last, and a store to the heap per message would
// cost a write barrier while the GC runs.
type inboundRun struct {
	to          Ref
	first, last *node
}

// NewInbound returns an empty Inbound for messages to s's actors.
func (p *port) NewInbound() *inbound {
	s := p.s
	return &inbound{s: s}
}

// Add queues the message of e for its actor; Flush hands it over. e is not
// retained.
func (in *inbound) Add(e *envelope) {
	k := len(in.runs) - 1
	var prev *node // the node added last, while in.blk still holds it
	if k >= 0 {
		prev = &in.blk.nodes[in.used-1]
	}
	if in.blk == nil || in.used == blockNodes {
		in.blk, in.used = in.s.newBlock(), 0
		in.blk.credit = in.credit
	}
	n := &in.blk.nodes[in.used]
	in.used++
	in.n++
	// A recycled block keeps the senders of its last messages: a stream's
	// consecutive messages mostly repeat the sender, which then need not
	// be stored again.
	n.msg, n.corr, n.kind = e.Msg, e.Corr, envKind(e)
	n.acct, n.size = 0, 0
	if in.credit != nil {
		size := min(max(e.Size, 0), maxCharge)
		n.size = uint32(size)
		in.pending += int64(size)
	}
	if !n.from.same(e.From) {
		n.from = e.From
	}
	if k >= 0 && in.runs[k].to.same(e.To) {
		n.next = prev
		return
	}
	if n.next != nil {
		n.next = nil
	}
	if k >= 0 {
		in.runs[k].first = prev
	}
	in.runs = append(in.runs, inboundRun{to: e.To, last: n})
}

// maxCharge is the most bytes a node is charged for: a Size beyond it
// (more than a maximum frame allows) is charged as maxCharge.
const maxCharge = 1 << 31

// Len returns how many messages were added since the last Flush.
func (in *inbound) Len() int { return in.n }

// Flush hands the messages added to their actors, in order; a message for
// an unknown actor becomes a dead letter (and fails its Ask).
func (in *inbound) Flush() {
	s := in.s
	if in.pending != 0 { // before any node can be handled and give it back
		in.credit.Charge(in.pending)
		in.pending = 0
	}
	if k := len(in.runs) - 1; k >= 0 {
		in.runs[k].first = &in.blk.nodes[in.used-1]
	}
	// The runs leave the Inbound before they are handed over: if a hook
	// panics meanwhile, a later Flush (Close, after the reader recovered)
	// must not hand the same nodes over again.
	runs := in.runs
	in.runs, in.n = in.runs[:0], 0
	for i := range runs {
		r := &runs[i]
		if c := s.names.load(r.to.Name()); c == nil || !c.pushRun(r.first, r.last) {
			for n := reverseNodes(r.first); n != nil; {
				next := n.next
				n.next = nil
				if c == nil || !c.push(n) {
					s.unregistered(r.to, n)
				}
				n = next
			}
		}
	}
	clear(runs)
}

// Close flushes what was added and gives back the memory the Inbound
// holds for later messages. The Inbound must not be used afterwards.
func (in *inbound) Close() {
	// The nodes never handed out go back first: once flushed, the
	// messages may be handled (and their nodes freed) at once, and the
	// block's count should not lag behind.
	if in.blk != nil && in.used < blockNodes {
		in.s.releaseBlockNodes(in.blk, int32(blockNodes-in.used))
	}
	in.Flush()
	in.blk = nil
}

// same is r == o, quicker when their strings are the same in memory, as
// those of consecutive remote messages mostly are.
func (r Ref) same(o Ref) bool {
	return sameString(r.s, o.s)
}
