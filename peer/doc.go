// Package peer is a Troupe peer: a libp2p host, its identity and
// configuration, the actor system it hosts and the router that carries
// messages between them and other peers.
//
// # Lifecycle
//
// New creates the host (listening on the configured addresses, with NAT
// port mapping and relays off unless asked for), starts the actor system
// and binds the router to it. Close drains outbound links within its
// context's deadline, stops the actors, then closes the host, waiting for
// every goroutine the node started.
//
// # Security
//
// Every connection is authenticated (TLS or Noise): a Ref's peer ID is the
// proven identity of the sender. WithAllowlist refuses connections from or
// to any other peer; WithPrivateNetwork admits only peers holding the same
// pre-shared key (TCP only).
package peer
