package actor

import (
	"sync/atomic"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Node kinds.
const (
	kindUser    uint8 = iota // a message for the cases
	kindReply                // an answer to an Ask, matched by correlation ID only
	kindSignal               // a link, monitor or exit signal, handled by the runtime
	kindTimeout              // a ReceiveWithin deadline; corr holds the receive generation
)

// node is one message in a mailbox.
type node struct {
	next    *node
	msg     any
	from    Ref
	corr    uint64
	kind    uint8
	acct    uint8  // what the message counts in its actor's mailboxAcct (acctMsg, acctBytes)
	inBlock bool   // own is the node's *nodeBlock (else a pooled node's *spi.Credit, or nil)
	size    uint32 // the bytes charged to the Credit (see charged)
	// own is the block the node belongs to, whose credit it is charged
	// to when size is not 0; or, for a pooled node, the Credit it is
	// charged to (nil: none). One word for both keeps a node 80 bytes.
	own owner
}

// block returns the block n belongs to, nil for a pooled node.
func (n *node) block() *nodeBlock {
	if n.inBlock {
		return ownerBlock(n.own)
	}
	return nil
}

// charged returns the Credit n's message is charged to, or nil.
func (n *node) charged() *spi.Credit {
	if n.inBlock {
		if n.size == 0 {
			return nil
		}
		return ownerBlock(n.own).credit
	}
	return ownerCredit(n.own)
}

// What a node counts in its actor's mailboxAcct (node.acct).
const (
	acctMsg   uint8 = 1 << iota // one of msgs
	acctBytes                   // size of bytes
)

// closedNode marks an inbox that accepts nothing more.
var closedNode = &node{}

// inbox is the lock-free multi-producer stack that senders push onto; the
// actor takes it whole and reverses it, which yields arrival order per
// sender.
type inbox struct {
	head atomic.Pointer[node]
}

// push adds n unless the inbox is closed.
func (b *inbox) push(n *node) bool {
	for {
		old := b.head.Load()
		if old == closedNode {
			return false
		}
		n.next = old
		if b.head.CompareAndSwap(old, n) {
			return true
		}
	}
}

// pushRun adds the nodes linked from first (the newest) to last (the
// oldest) at once, unless the inbox is closed.
func (b *inbox) pushRun(first, last *node) bool {
	for {
		old := b.head.Load()
		if old == closedNode {
			last.next = nil
			return false
		}
		last.next = old
		if b.head.CompareAndSwap(old, first) {
			return true
		}
	}
}

func (b *inbox) nonEmpty() bool {
	h := b.head.Load()
	return h != nil && h != closedNode
}

// takeAll returns the queued nodes oldest first. Only the owner calls it,
// and never after close.
func (b *inbox) takeAll() *node {
	if b.head.Load() == nil {
		return nil
	}
	return reverseNodes(b.head.Swap(nil))
}

// takeAllCharged is takeAll, and reports whether one of the nodes is
// charged to a Credit (has a size): the reversal sees every node anyway.
func (b *inbox) takeAllCharged() (*node, bool) {
	if b.head.Load() == nil {
		return nil, false
	}
	var prev *node
	var sizes uint32
	for h := b.head.Swap(nil); h != nil; {
		next := h.next
		h.next = prev
		sizes |= h.size
		prev = h
		h = next
	}
	return prev, sizes != 0
}

// close stops the inbox and returns what it still held, oldest first.
func (b *inbox) close() *node {
	h := b.head.Swap(closedNode)
	if h == closedNode {
		return nil
	}
	return reverseNodes(h)
}

func reverseNodes(h *node) *node {
	var prev *node
	for h != nil {
		next := h.next
		h.next = prev
		prev = h
		h = next
	}
	return prev
}

// savedList holds the messages no continuation accepted yet, in arrival
// order, as a circular list reached through its tail (one word per actor).
type savedList struct {
	tail *node
}

func (s *savedList) empty() bool { return s.tail == nil }

func (s *savedList) append(n *node) {
	if s.tail == nil {
		n.next = n
	} else {
		n.next = s.tail.next
		s.tail.next = n
	}
	s.tail = n
}

// takeFirst removes and returns the oldest node that one of cases accepts,
// with the first such case.
func (s *savedList) takeFirst(cont Case) (*node, Case) {
	if s.tail == nil {
		return nil, nil
	}
	prev := s.tail
	for {
		n := prev.next
		if cs := match(cont, n); cs != nil {
			if n == prev { // the only node
				s.tail = nil
			} else {
				prev.next = n.next
				if n == s.tail {
					s.tail = prev
				}
			}
			n.next = nil
			return n, cs
		}
		if n == s.tail {
			return nil, nil
		}
		prev = n
	}
}

// takeAll empties the list and returns its nodes oldest first, linearly
// linked.
func (s *savedList) takeAll() *node {
	if s.tail == nil {
		return nil
	}
	head := s.tail.next
	s.tail.next = nil
	s.tail = nil
	return head
}

// match returns the first case of the continuation that accepts n, or nil.
func match(cont Case, n *node) Case {
	if m, ok := cont.(*multiCase); ok {
		for _, cs := range m.cases {
			if cs.accepts(n) {
				return cs
			}
		}
		return nil
	}
	if cont != nil && cont.accepts(n) {
		return cont
	}
	return nil
}
