// Package spi holds what package actor and its transport SPI (package
// actor/transport) share without an import cycle: transport imports actor,
// so the types both use live here, generic over actor's Ref and MonitorID
// where they carry them, and actor hands transport its internals through
// Hooks, set once in actor's init (the pattern of gRPC's internal
// package); package actor/group reaches actor's group table the same way
// (GroupHooks). The hooks are written once, in actor's init, and read in
// the package initialization of transport and group, which runs after it
// (they import actor) on the same goroutine: no synchronization needed,
// and actor's TestSPIHooksAllSet checks that none is nil. Nothing outside
// actor, actor/transport and actor/group may import it.
//
// # Files
//
//	doc.go     this comment
//	types.go   Envelope, Outbound, the Signal types, Undeliverable
//	credit.go  Credit: bytes of a peer's messages not handled yet
//	hooks.go   Hooks: the functions of actor that transport calls
//	group.go   Joined, Left, ErrNoGroups and GroupHooks (for actor/group)
package spi
