package actor

import (
	"sync/atomic"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Messages from other peers arrive in long runs, so an Inbound takes their
// nodes from blocks rather than from the node pool: consecutive messages
// get consecutive nodes, which the reader fills and the actor reads in
// memory order, without walking a free list of nodes scattered over the
// heap. A block goes back to its pool when all its nodes were released.
// A node of a block never joins an actor's saved messages (it is copied
// into a pooled node first), so that a message kept for a later receive
// does not keep the rest of its block alive.

// blockNodes is the number of nodes in a block.
const blockNodes = 64

// nodeBlock is an array of nodes recycled as a whole.
type nodeBlock struct {
	nodes [blockNodes]node
	// pending counts the nodes not released yet, the ones never handed
	// out included; the release that brings it to zero recycles the block.
	pending atomic.Int32
	credit  *spi.Credit // what the nodes with a size are charged to; set by the Inbound that takes the block
}

// newBlock returns a block whose nodes are all pending.
func (s *System) newBlock() *nodeBlock {
	b, _ := s.blocks.Get().(*nodeBlock)
	if b == nil {
		b = new(nodeBlock)
		for i := range b.nodes {
			b.nodes[i].own, b.nodes[i].inBlock = ownedByBlock(b), true
		}
	}
	b.pending.Store(blockNodes)
	return b
}

// releaseBlockNodes gives back k nodes of b, recycling b when they were
// its last. The nodes must hold no message any more.
func (s *System) releaseBlockNodes(b *nodeBlock, k int32) {
	if b.pending.Add(-k) != 0 {
		return
	}
	// The nodes keep their senders (small strings, which Inbound.Add then
	// mostly need not store again) and their links within the block; a
	// link out of the block would keep another block or node alive.
	for i := range b.nodes {
		n := &b.nodes[i]
		if n.next != nil && !b.holds(n.next) {
			n.next = nil
		}
	}
	s.blocks.Put(b)
}

// freeList gathers the nodes an activation handled, to give them back at
// the end: pooled nodes as one run, block nodes as one count per block.
type freeList struct {
	run  *node      // pooled nodes, cleared, linked through next
	last *node      // the end of run
	blk  *nodeBlock // the block of the latest block nodes counted in k
	k    int32
	// acct is the nodes' actor's mailboxAcct (set before any node counted
	// in it can be handled: a node counts in the acct its actor had).
	acct *atomic.Pointer[mailboxAcct]
	// What the nodes counted: bytes charged to credit (the latest one
	// met), of which acctBytes counted in their actor's backlog for it.
	// (What they count against its message limit goes back at once: room
	// comes back as the actor handles them.)
	credit      *spi.Credit
	creditBytes int64
	acctBytes   int64
}

// add releases n, which nothing refers to any more.
func (f *freeList) add(s *System, n *node) {
	if n.size != 0 || n.acct != 0 {
		f.giveBack(n)
	}
	if b := n.block(); b != nil {
		n.msg = nil // the message may be collected before the block is
		if b != f.blk {
			f.flushBlock(s)
			f.blk = b
		}
		f.k++
		return
	}
	// Only msg needs clearing (so that the message may be collected):
	// a pooled node's other fields are set when it is used again, and
	// each store of a pointer costs a write barrier while the GC marks.
	// from keeps a sender's Ref text alive until then.
	n.msg, n.next = nil, f.run
	if f.run == nil {
		f.last = n
	}
	f.run = n
}

// keep adds the run of free nodes spare (see Context.spare) to those
// done gives back, so that one Put takes both.
func (f *freeList) keep(s *System, spare *node) {
	switch {
	case spare == nil:
	case f.run == nil:
		f.run = spare
	case f.last == nil: // run's end is unknown
		s.nodes.Put(spare)
	default:
		f.last.next = spare
		f.last = nil
	}
}

func (f *freeList) flushBlock(s *System) {
	if f.blk != nil {
		s.releaseBlockNodes(f.blk, f.k)
		f.blk, f.k = nil, 0
	}
}

// giveBack counts what n holds of its Credit and of its actor's limits,
// to be given back by done.
func (f *freeList) giveBack(n *node) {
	if c := n.charged(); c != nil {
		if c != f.credit {
			f.flushCredit()
			f.credit = c
		}
		f.creditBytes += int64(n.size)
	}
	if n.acct&acctBytes != 0 {
		f.acctBytes += int64(n.size)
	}
	if n.acct&acctMsg != 0 {
		f.acct.Load().msgs.Add(-1)
	}
	n.acct, n.size = 0, 0
	if !n.inBlock {
		n.own = nil
	}
}

func (f *freeList) flushCredit() {
	if f.credit == nil {
		return
	}
	if f.acctBytes != 0 {
		f.acct.Load().unhold(f.credit, f.acctBytes)
		f.acctBytes = 0
	}
	f.credit.Release(f.creditBytes)
	f.credit, f.creditBytes = nil, 0
}

// settle gives back what the nodes counted of their Credits and of their
// actor's backlog.
func (f *freeList) settle() { f.flushCredit() }

// done gives everything back (see settle).
func (f *freeList) done(s *System) {
	f.settle()
	f.flushBlock(s)
	if f.run != nil {
		s.nodes.Put(f.run)
		f.run, f.last = nil, nil
	}
}

// detach returns n itself, or a pooled copy of n when n belongs to a
// block, which it then releases: what an actor keeps for later must not
// hold a block.
func (s *System) detach(n *node) *node {
	b := n.block()
	if b == nil {
		return n
	}
	m := s.newNode(n.msg, n.from, n.corr, n.kind)
	m.acct = n.acct                 // still counted against its actor's limits
	if c := n.charged(); c != nil { // the copy stays charged
		m.own, m.size = ownedByCredit(c), n.size
	}
	n.msg, n.acct, n.size = nil, 0, 0
	s.releaseBlockNodes(b, 1)
	return m
}
