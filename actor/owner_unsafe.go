//go:build !nounsafe

package actor

import (
	"unsafe"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// owner is what a node belongs to (node.own): its *nodeBlock or the
// *spi.Credit it is charged to, in one word. With the build tag nounsafe,
// owner_safe.go makes it an interface value instead (two words).
type owner = unsafe.Pointer

// ownedByBlock and ownedByCredit return the owner value of b and of c.
func ownedByBlock(b *nodeBlock) owner { return unsafe.Pointer(b) }

func ownedByCredit(c *spi.Credit) owner { return unsafe.Pointer(c) }

// ownerBlock returns the block o is, which o must be.
func ownerBlock(o owner) *nodeBlock { return (*nodeBlock)(o) }

// ownerCredit returns the Credit o is (nil for nil), which o must be.
func ownerCredit(o owner) *spi.Credit { return (*spi.Credit)(o) }

// holds reports whether n is one of b's nodes, by its address alone: n
// may be a node in use elsewhere, whose fields must not be read.
func (b *nodeBlock) holds(n *node) bool {
	lo := uintptr(unsafe.Pointer(&b.nodes[0]))
	return uintptr(unsafe.Pointer(n))-lo < unsafe.Sizeof(b.nodes)
}
