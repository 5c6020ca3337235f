// Package group is actor groups: an actor Joins a group by name and
// receives every message Broadcast (from an actor) or Published (from
// plain code) to it, once, on every peer of the mesh when the system has
// a group transport (package peer's WithGroups: GossipSub, in package
// routing), else on its own system. With WatchPresence a member also
// hears of the others joining and leaving (Joined, Left).
//
// The membership table is the actor system's (a member leaves every
// group when it stops); this package is its API, calling into package
// actor through function values actor sets in its init
// (actor/internal/spi), so that package actor's own API stays about
// actors.
//
// # Files
//
//	doc.go    this comment
//	group.go  Join, Leave, Broadcast, Publish, the member queries, Joined, Left
package group
