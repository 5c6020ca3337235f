package actor

import (
	"testing"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// TestOwner: a node's owner gives back its block or Credit, and holds
// tells a block's nodes from all others by address.
func TestOwner(t *testing.T) {
	b, other := new(nodeBlock), new(nodeBlock)
	for i := range b.nodes {
		if !b.holds(&b.nodes[i]) {
			t.Fatalf("node %d of the block is not held", i)
		}
		if b.holds(&other.nodes[i]) {
			t.Fatalf("node %d of another block is held", i)
		}
	}
	if b.holds(new(node)) {
		t.Error("a pooled node is held")
	}
	if ownerBlock(ownedByBlock(b)) != b {
		t.Error("ownerBlock does not give back the block")
	}
	c := new(spi.Credit)
	if ownerCredit(ownedByCredit(c)) != c {
		t.Error("ownerCredit does not give back the Credit")
	}
	var n node
	if n.charged() != nil || n.block() != nil {
		t.Error("a node with no owner is charged or in a block")
	}
}
