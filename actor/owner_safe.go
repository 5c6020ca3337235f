//go:build nounsafe

package actor

import "github.com/troupe-mesh/troupe/actor/internal/spi"

// owner is what a node belongs to (node.own): its *nodeBlock or the
// *spi.Credit it is charged to. Without unsafe it is an interface value,
// which makes a node a word larger than in the default build.
type owner = any

// ownedByBlock and ownedByCredit return the owner value of b and of c.
func ownedByBlock(b *nodeBlock) owner { return b }

func ownedByCredit(c *spi.Credit) owner { return c }

// ownerBlock returns the block o is, which o must be.
func ownerBlock(o owner) *nodeBlock { return o.(*nodeBlock) }

// ownerCredit returns the Credit o is (nil for nil), which o must be.
func ownerCredit(o owner) *spi.Credit {
	c, _ := o.(*spi.Credit)
	return c
}

// holds reports whether n is one of b's nodes, by its address alone: n
// may be a node in use elsewhere, whose fields must not be read.
func (b *nodeBlock) holds(n *node) bool {
	for i := range b.nodes {
		if n == &b.nodes[i] {
			return true
		}
	}
	return false
}
