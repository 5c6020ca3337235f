// Package global is a node's mesh-wide names (Erlang's global), for
// peer.Node.ClaimGlobal and WhereisGlobal.
//
// It owns the node's own claims (name → local actor, at most
// discovery.MaxAdGlobal), which the node's advertisement carries
// (Source); the other peers' claims are in the directory, and every peer
// resolves the claims it holds with the pure globalWinner (resolve.go),
// so that peers that hold the same claims agree. A claim that another
// beats is withdrawn and its actor told (Config.Lost makes the message:
// peer.GlobalNameLost). It gets what it needs of the node at
// construction (Config: the actor system, the node's ID) and the
// directory at Start; peer re-exports its sentinels.
//
// # Goroutines
//
// One watch goroutine, from Start to Close, resolves the claims each
// time the directory stores an advertisement and every second.
//
// # Locks
//
// Names.mu guards the claims. Claim holds it over the directory's Peers
// (so the order is Names.mu, then the directory's lock; the directory
// calls Source holding none of its own), the actor system's Whereis (a
// read of its registry) and the directory's Changed (a non-blocking
// signal); never over a Send.
//
// # Files
//
//	global.go   Names: claims made, looked up, advertised, and resolved against the others'
//	resolve.go  the pure resolution of a name's claims
package global
