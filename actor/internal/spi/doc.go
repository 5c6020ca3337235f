// Package spi holds what package actor and its transport SPI (package
// actor/transport) share without an import cycle: transport imports actor,
// so the types both use live here, generic over actor's Ref and MonitorID
// where they carry them, and actor hands transport its internals through
// Hooks, set once in actor's init (the pattern of gRPC's internal
// package). Nothing outside actor and actor/transport may import it.
//
// # Files
//
//	doc.go     this comment
//	types.go   Envelope, Outbound, the Signal types, Undeliverable
//	credit.go  Credit: bytes of a peer's messages not handled yet
//	hooks.go   Hooks: the functions of actor that transport calls
//	group.go   Joined, Left, ErrNoGroups and GroupHooks (for actor/group)
package spi
