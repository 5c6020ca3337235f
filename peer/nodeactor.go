package peer

import (
	"context"
	"fmt"
	"reflect"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer/internal/nodesvc"
)

// The node actor ($node) and its service live in peer/internal/nodesvc;
// these are its public face.

// NodeActor is the name of the actor every node runs to answer name lookups
// and remote spawns.
const NodeActor = "$node"

// ErrUnknownBehavior reports that a remote spawn named a behavior the peer has not
// registered.
var ErrUnknownBehavior = nodesvc.ErrUnknownBehavior

// ErrSpawnArgs reports a remote spawn whose arguments are not of the type
// the behavior takes (see RegisterBehaviorOf).
var ErrSpawnArgs = nodesvc.ErrSpawnArgs

// ErrBehaviorTaken reports a RegisterBehavior under a name registered
// already.
var ErrBehaviorTaken = nodesvc.ErrBehaviorTaken

// BehaviorFactory builds a behavior from the arguments of a remote spawn
// (a value of a registered type, or codec.Raw).
type BehaviorFactory func(args any) (actor.Behavior, error)

// RegisterBehavior lets peers spawn actors running the behavior f builds,
// under name (closures cannot travel; names can). An actor another peer
// spawned stops when that peer is gone (see OutlivesSpawner).
func (n *Node) RegisterBehavior(name string, f BehaviorFactory, opts ...BehaviorOption) error {
	switch {
	case name == "":
		return fmt.Errorf("peer: RegisterBehavior: an empty name: %w", actor.ErrInvalidName)
	case f == nil:
		return fmt.Errorf("peer: RegisterBehavior %q: a nil factory: %w", name, actor.ErrNilBehavior)
	}
	var bc behaviorConfig
	for _, o := range opts {
		o(&bc)
	}
	return n.svc.Register(name, f, bc.outlives)
}

// RegisterBehaviorOf is Node.RegisterBehavior for a factory of arguments
// of type A: a spawn whose arguments are of another type fails with an
// error wrapping ErrSpawnArgs that names both types; a spawn with no
// arguments gets the zero A.
func RegisterBehaviorOf[A any](n *Node, name string, f func(args A) (actor.Behavior, error), opts ...BehaviorOption) error {
	if f == nil {
		return n.RegisterBehavior(name, nil, opts...)
	}
	return n.RegisterBehavior(name, func(args any) (actor.Behavior, error) {
		a, ok := args.(A)
		if !ok && args != nil {
			return nil, fmt.Errorf("%w: got %T, want %v", ErrSpawnArgs, args, reflect.TypeFor[A]())
		}
		return f(a)
	}, opts...)
}

// Lookup asks peer id whether it hosts an actor called name, and returns
// its Ref, or an error wrapping actor.ErrNoSuchActor.
func (n *Node) Lookup(ctx context.Context, id libp2ppeer.ID, name string) (actor.Ref, error) {
	return n.svc.Lookup(ctx, id, name)
}

// SpawnRemote asks peer id to spawn the behavior it registered as behavior,
// built from args (a value of a type registered on both peers), under name
// ("" for a generated one), and returns the new actor's Ref. Its errors
// match with errors.Is: ErrUnknownBehavior, actor.ErrNameTaken,
// actor.ErrInvalidName, actor.ErrClosed, codec.ErrUnregistered or
// codec.ErrMalformed (arguments of a type the peer does not know or
// cannot decode), ErrSpawnArgs (arguments of a type the behavior does not
// take), ErrSpawnRefused (the peer's WithSpawnPolicy said no, or name
// does not begin with its WithRemoteSpawnNames prefix, "remote." by
// default), actor.ErrSystemLimit (this node's quota of live actors
// spawned there, WithRemoteSpawnQuota, or that peer's total for all,
// WithRemoteSpawnTotal, is used up), an error of the Ask (context.DeadlineExceeded,
// actor.ErrNoSuchActor, routing.ErrUnreachable, ...); a factory's own
// error comes back as text.
func (n *Node) SpawnRemote(ctx context.Context, id libp2ppeer.ID, behavior, name string, args any) (actor.Ref, error) {
	return n.svc.SpawnRemote(ctx, id, behavior, name, args)
}
