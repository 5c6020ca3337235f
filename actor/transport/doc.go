// Package transport is the actor system as a transport sees it: the SPI
// between package actor and what carries its messages to other peers
// (package routing implements it on libp2p). Applications need none of
// it; an embedder that writes its own transport, or wires routing to a
// system as package peer does, uses it.
//
// NewSystem starts a system and builds its transport in one step: the
// Factory gets the system's Port (how messages, replies, refusals and news
// of peers and groups from other peers come in) and returns the Remote
// (and optionally BatchRemote, DirectRemote) for what goes out and the
// GroupTransport for groups. The transport carries Envelopes, Outbounds
// and the Signal types between peers; Inbound and Credit batch and count
// what comes in. The options here (WithRemoteBacklog, WithRemoteWatchLimit,
// WithRemoteWatchTotal, WithNamesChanged) are actor.Options that only a
// system with a transport needs.
//
// This package imports actor; actor reaches no name of it. The types both
// use (Envelope, Outbound, the Signal types, Undeliverable, Credit's
// counter) are defined in actor/internal/spi, and the Port's methods call
// actor's internals through function values actor sets in its init: one
// direct call more per call, no interface and no allocation.
//
// # Files
//
//	doc.go      this comment
//	system.go   NewSystem, Factory, the transport-only options
//	port.go     Port: what comes in from other peers
//	types.go    Envelope, Outbound, Remote, BatchRemote, DirectRemote,
//	            GroupTransport, the Signal types, Undeliverable
//	inbound.go  Inbound: batches of remote messages; Credit: their bytes
package transport
