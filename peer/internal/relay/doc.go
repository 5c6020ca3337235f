// Package relay is a node's circuit relay service with limits per mesh
// membership: go-libp2p's relay runs without a limit on a host whose hop
// handler and stop streams this package wraps, so that a circuit between
// two members of the mesh has no time or data limit and any other keeps
// the stranger limit, told to both ends and enforced here.
//
// It owns the relay manager, the membership policy (read only after
// Start) and the relay's counts (Stats). It gets what it needs of the
// node at Start: the host and a Config (members, whether every peer is
// one, the stranger limit, a Prometheus registerer).
//
// # Goroutines
//
// None of its own: go-libp2p's relay manager and relay run their
// goroutines, and call the wrappers (relayHost, relayStream) on them.
//
// # Locks
//
// relayStream.mu guards one circuit end's state (its first messages,
// its limit, deadlines, data left): a leaf, never held across the
// stream's I/O. The counts are atomics.
//
// # Files
//
//	limits.go  Service, Config, Stats; the policy; the host the relay runs on; its metrics tracer
//	stream.go  a circuit's ends: limits told and enforced
package relay
