package peer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/routing"
)

// NodeActor is the name of the actor every node runs to answer name lookups
// and remote spawns.
const NodeActor = "$node"

// ErrUnknownBehavior reports that a remote spawn named a behavior the peer has not
// registered.
var ErrUnknownBehavior = errors.New("peer: unknown behavior")

// ErrSpawnArgs reports a remote spawn whose arguments are not of the type
// the behavior takes (see RegisterBehaviorOf).
var ErrSpawnArgs = errors.New("peer: spawn arguments of the wrong type")

// ErrBehaviorTaken reports a RegisterBehavior under a name registered
// already.
var ErrBehaviorTaken = errors.New("peer: behavior name taken")

// Requests and replies of the node actor.
type (
	whereisReq struct {
		Name string `cbor:"1,keyasint"`
	}
	whereisReply struct {
		Found bool `cbor:"1,keyasint"`
	}
	spawnReq struct {
		Behavior string    `cbor:"1,keyasint"`
		Name     string    `cbor:"2,keyasint,omitempty"`
		Args     codec.Raw `cbor:"3,keyasint"`
	}
	spawnReply struct {
		Name string `cbor:"1,keyasint,omitempty"`
		Err  string `cbor:"2,keyasint,omitempty"`
		Code uint8  `cbor:"3,keyasint,omitempty"` // index of Err's sentinel in spawnErrors; 0: none (or an older peer)
	}
)

// spawnErrors are the sentinels a remote spawn's error can match, by their
// code on the wire (never reorder; append only).
var spawnErrors = []error{
	nil,
	ErrUnknownBehavior,
	actor.ErrNameTaken,
	actor.ErrInvalidName,
	actor.ErrNilBehavior,
	actor.ErrClosed,
	codec.ErrMalformed,
	codec.ErrUnregistered,
	ErrSpawnRefused,
	actor.ErrSystemLimit,
	ErrSpawnArgs,
}

// spawnFailed is the reply for a spawn that failed with err.
func spawnFailed(err error) spawnReply {
	for code, s := range spawnErrors[1:] {
		if errors.Is(err, s) {
			return spawnReply{Err: err.Error(), Code: uint8(code + 1)}
		}
	}
	return spawnReply{Err: err.Error()}
}

// err is the error of a failed spawn's reply: one that matches its
// sentinel with errors.Is where the code names one.
func (r spawnReply) err() error {
	if int(r.Code) > 0 && int(r.Code) < len(spawnErrors) {
		return fmt.Errorf("%w (remote: %s)", spawnErrors[r.Code], r.Err)
	}
	return errors.New(r.Err)
}

// The node actor's requests and replies travel on the control stream.
func (whereisReq) TroupeControl()   {}
func (whereisReply) TroupeControl() {}
func (spawnReq) TroupeControl()     {}
func (spawnReply) TroupeControl()   {}

var _ routing.Control = whereisReq{}

func registerService(reg *codec.Registry) error {
	return errors.Join(
		codec.RegisterOnce[whereisReq](reg, "troupe.whereis"),
		codec.RegisterOnce[whereisReply](reg, "troupe.whereisReply"),
		codec.RegisterOnce[spawnReq](reg, "troupe.spawn"),
		codec.RegisterOnce[spawnReply](reg, "troupe.spawnReply"),
	)
}

// BehaviorFactory builds a behavior from the arguments of a remote spawn
// (a value of a registered type, or codec.Raw).
type BehaviorFactory func(args any) (actor.Behavior, error)

// behaviors is the table of behaviors this node lets peers spawn.
type behaviors struct {
	mu sync.RWMutex // guards m
	m  map[string]behavior
}

// behavior is a registered behavior's factory and options.
type behavior struct {
	f BehaviorFactory
	behaviorConfig
}

func (b *behaviors) get(name string) (behavior, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	bh, ok := b.m[name]
	return bh, ok
}

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
	n.behaviors.mu.Lock()
	defer n.behaviors.mu.Unlock()
	if n.behaviors.m == nil {
		n.behaviors.m = make(map[string]behavior)
	}
	if _, ok := n.behaviors.m[name]; ok {
		return fmt.Errorf("%w: %q", ErrBehaviorTaken, name)
	}
	bh := behavior{f: f}
	for _, o := range opts {
		o(&bh.behaviorConfig)
	}
	n.behaviors.m[name] = bh
	return nil
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
	ref, err := Ref(id, name)
	if err != nil {
		return actor.Ref{}, err
	}
	if id == n.ID() {
		if _, ok := n.sys.Whereis(name); ok {
			return ref, nil
		}
		return actor.Ref{}, fmt.Errorf("%w: %v", actor.ErrNoSuchActor, ref)
	}
	svc, _ := Ref(id, NodeActor)
	v, err := n.sys.Ask(ctx, svc, whereisReq{Name: name})
	if err != nil {
		return actor.Ref{}, fmt.Errorf("peer: lookup %v: %w", ref, err)
	}
	if r, ok := v.(whereisReply); !ok || !r.Found {
		return actor.Ref{}, fmt.Errorf("%w: %v", actor.ErrNoSuchActor, ref)
	}
	return ref, nil
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
	typ, body, err := n.reg.Encode(args)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("peer: spawn arguments: %w", err)
	}
	req := spawnReq{Behavior: behavior, Name: name, Args: codec.Raw{Type: typ, Body: body}}
	if id == n.ID() {
		ref, err := n.spawnLocal(req, nil)
		if err != nil {
			return actor.Ref{}, fmt.Errorf("peer: spawn on %v: %w", id, err)
		}
		return ref, nil
	}
	svc, _ := Ref(id, NodeActor)
	v, err := n.sys.Ask(ctx, svc, req)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("peer: spawn on %v: %w", id, err)
	}
	rep, ok := v.(spawnReply)
	switch {
	case !ok:
		return actor.Ref{}, fmt.Errorf("peer: spawn on %v: unexpected reply %T", id, v)
	case rep.Err != "":
		return actor.Ref{}, fmt.Errorf("peer: spawn on %v: %w", id, rep.err())
	}
	return Ref(id, rep.Name)
}
