package peer

import (
	"context"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer/internal/global"
)

// Mesh-wide names (Erlang's global) live in peer/internal/global: a peer
// claims a name for one of its actors in its signed advertisement, and
// every peer resolves the claims it holds the same way.

// Errors of ClaimGlobal.
var (
	// ErrNameTaken: another peer's claim of the name wins.
	ErrNameTaken = global.ErrNameTaken
	// ErrTooManyClaims: the node claims discovery.MaxAdGlobal names already.
	ErrTooManyClaims = global.ErrTooManyClaims
	// ErrNotLocal: a claim names an actor of another peer.
	ErrNotLocal = global.ErrNotLocal
)

// GlobalNameLost is what the actor that held a mesh-wide name receives
// when the node learns of a claim of the same name that wins (a partition
// healed, or two peers claimed it at once): the name is the Winner's, and
// this actor's claim is withdrawn.
type GlobalNameLost struct {
	Name   string
	Winner actor.Ref
}

// globalLost is the global.Config.Lost of a node.
func globalLost(name string, winner actor.Ref) any { return GlobalNameLost{Name: name, Winner: winner} }

// ClaimGlobal claims name for the whole mesh for the local actor ref, and
// advertises the claim. It fails with ErrNameTaken when the node knows of
// another peer's claim of name (the error names the holder), ErrNotLocal,
// actor.ErrNoSuchActor (ref is not alive), ErrTooManyClaims, ErrNoDirectory
// without WithGroups, or ctx's error. A claim that a winning claim beats
// later, once the node learns of it, is withdrawn and its actor receives
// GlobalNameLost. The claim ends when the actor stops. Claims are resolved
// from the directory: see docs/scale.md for their limits. Safe for
// concurrent use.
func (n *Node) ClaimGlobal(ctx context.Context, name string, ref actor.Ref) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.dir == nil {
		return ErrNoDirectory
	}
	return n.global.Claim(name, ref)
}

// WhereisGlobal returns the actor that holds the mesh-wide name, as this
// node resolves the claims it knows of, and whether one does. Safe for
// concurrent use.
func (n *Node) WhereisGlobal(name string) (actor.Ref, bool) {
	return n.global.Whereis(name)
}
