package nodesvc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/routing"
)

// Name is the name of the actor every node runs to answer name lookups
// and remote spawns (peer.NodeActor).
const Name = "$node"

// Config is what the service needs of its node.
type Config struct {
	Sys *actor.System
	Reg *codec.Registry
	// Policy, if not nil, decides whether a peer may spawn a behavior
	// (peer.WithSpawnPolicy); it runs on the node actor's event loop.
	Policy func(from libp2ppeer.ID, behavior string) error
	Quota  int    // live actors each other peer may have spawned here
	Total  int    // live actors all other peers together may have spawned here
	Names  string // the prefix of the names another peer's spawn may ask for
}

// Service is a node's $node: the behaviors other peers may spawn, the
// node actor that answers them, and the asking side of lookups and
// spawns. Safe for concurrent use.
type Service struct {
	cfg       Config
	behaviors behaviors
}

// New returns the service of the node whose system and registry cfg
// holds; the node actor runs once the node spawns Actor under Name.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

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

// RegisterTypes registers the node actor's requests and replies in reg.
func RegisterTypes(reg *codec.Registry) error {
	return errors.Join(
		codec.RegisterOnce[whereisReq](reg, "troupe.whereis"),
		codec.RegisterOnce[whereisReply](reg, "troupe.whereisReply"),
		codec.RegisterOnce[spawnReq](reg, "troupe.spawn"),
		codec.RegisterOnce[spawnReply](reg, "troupe.spawnReply"),
	)
}

// Factory builds a behavior from the arguments of a remote spawn (a
// value of a registered type, or codec.Raw): peer.BehaviorFactory.
type Factory = func(args any) (actor.Behavior, error)

// behaviors is the table of behaviors this node lets peers spawn.
type behaviors struct {
	mu sync.RWMutex // guards m
	m  map[string]behavior
}

// behavior is a registered behavior's factory and options.
type behavior struct {
	f        Factory
	outlives bool // its actors live on when their spawner is gone (peer.OutlivesSpawner)
}

func (b *behaviors) get(name string) (behavior, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	bh, ok := b.m[name]
	return bh, ok
}

// Register lets peers spawn actors running the behavior f builds, under
// name; outlives: they live on when their spawner is gone. A name
// registered already fails with ErrBehaviorTaken.
func (s *Service) Register(name string, f Factory, outlives bool) error {
	b := &s.behaviors
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]behavior)
	}
	if _, ok := b.m[name]; ok {
		return fmt.Errorf("%w: %q", ErrBehaviorTaken, name)
	}
	b.m[name] = behavior{f: f, outlives: outlives}
	return nil
}

// Lookup asks peer id whether it hosts an actor called name, and returns
// its Ref, or an error wrapping actor.ErrNoSuchActor.
func (s *Service) Lookup(ctx context.Context, id libp2ppeer.ID, name string) (actor.Ref, error) {
	ref, err := actor.NewRef(id.String(), name)
	if err != nil {
		return actor.Ref{}, err
	}
	if id.String() == s.cfg.Sys.Peer() {
		if _, ok := s.cfg.Sys.Whereis(name); ok {
			return ref, nil
		}
		return actor.Ref{}, fmt.Errorf("%w: %v", actor.ErrNoSuchActor, ref)
	}
	svc, _ := actor.NewRef(id.String(), Name)
	v, err := s.cfg.Sys.Ask(ctx, svc, whereisReq{Name: name})
	if err != nil {
		return actor.Ref{}, fmt.Errorf("peer: lookup %v: %w", ref, err)
	}
	if r, ok := v.(whereisReply); !ok || !r.Found {
		return actor.Ref{}, fmt.Errorf("%w: %v", actor.ErrNoSuchActor, ref)
	}
	return ref, nil
}

// SpawnRemote asks peer id to spawn the behavior it registered as behavior,
// built from args, under name ("" for a generated one), and returns the
// new actor's Ref; peer.Node.SpawnRemote lists its errors. A spawn on
// this node itself is done here, within no quota.
func (s *Service) SpawnRemote(ctx context.Context, id libp2ppeer.ID, behavior, name string, args any) (actor.Ref, error) {
	typ, body, err := s.cfg.Reg.Encode(args)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("peer: spawn arguments: %w", err)
	}
	req := spawnReq{Behavior: behavior, Name: name, Args: codec.Raw{Type: typ, Body: body}}
	if id.String() == s.cfg.Sys.Peer() {
		ref, err := s.spawnLocal(req, nil)
		if err != nil {
			return actor.Ref{}, fmt.Errorf("peer: spawn on %v: %w", id, err)
		}
		return ref, nil
	}
	svc, _ := actor.NewRef(id.String(), Name)
	v, err := s.cfg.Sys.Ask(ctx, svc, req)
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
	return actor.NewRef(id.String(), rep.Name)
}
