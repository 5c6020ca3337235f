package nodesvc

import "errors"

// The service's sentinels are peer's: peer re-exports these values
// (peer.ErrUnknownBehavior is ErrUnknownBehavior), so their texts keep
// peer's prefix, and a remote spawn's error matches them on either side
// by their code on the wire (spawnErrors).
var (
	// ErrUnknownBehavior reports that a remote spawn named a behavior the
	// peer has not registered.
	ErrUnknownBehavior = errors.New("peer: unknown behavior")
	// ErrSpawnArgs reports a remote spawn whose arguments are not of the
	// type the behavior takes.
	ErrSpawnArgs = errors.New("peer: spawn arguments of the wrong type")
	// ErrBehaviorTaken reports a Register under a name registered already.
	ErrBehaviorTaken = errors.New("peer: behavior name taken")
	// ErrSpawnRefused reports a remote spawn that the asked node's spawn
	// policy refused.
	ErrSpawnRefused = errors.New("peer: remote spawn refused")
	// ErrSpawnerGone is the exit reason of the actors another peer
	// spawned when that peer is gone.
	ErrSpawnerGone = errors.New("peer: the peer that spawned this actor is gone")
)
