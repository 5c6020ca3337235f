// Package nodesvc is a node's $node service: the actor every node runs
// under Name to answer other peers' name lookups and remote spawns, and
// the asking side of both (peer.Node.Lookup and SpawnRemote).
//
// It owns the table of behaviors other peers may spawn (Register), the
// node actor's record of the live actors each other peer spawned here
// (their count per peer and in all, within Config's Quota and Total) and
// the guards that stop those actors when their spawner is gone. It gets
// what it needs of the node at construction (Config: the actor system,
// the codec registry, the spawn policy, quota, total and name prefix)
// and knows nothing else of it; peer re-exports its sentinels.
//
// # Goroutines
//
// None of its own. The node actor (Actor) runs on the actor system's
// event loops, as does each spawner's guard actor; Lookup and
// SpawnRemote run on their caller's goroutine (an Ask to the other
// peer's $node).
//
// # Locks
//
// behaviors.mu guards the behavior table (a leaf: no call out while held;
// a factory runs after it is released). The node actor's spawn records
// and guards have no lock: the node actor owns them.
//
// # Files
//
//	service.go  Service, Config, the wire messages and their error codes, Register, Lookup, SpawnRemote
//	spawn.go    the node actor: lookups answered, spawns within policy, quotas and name prefix
//	guard.go    what ties a spawned actor to the peer that spawned it
//	errors.go   the sentinels (peer's)
package nodesvc
