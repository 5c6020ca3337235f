package group

import (
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// hooks are package actor's side, set in actor's init (which runs before
// this package's variables are initialized: it imports actor).
var hooks = spi.Group.(*spi.GroupHooks[actor.Context, actor.System, actor.Ref])

// ErrNoGroups reports that the system has no group transport and the
// group has no local member, or a group name is empty.
var ErrNoGroups = spi.ErrNoGroups

// Joined tells a group member that Member joined Group (with
// WatchPresence). A new member gets one for every member already there.
// Its fields:
//
//	Group  string    // the group's name
//	Member actor.Ref // the actor that joined, on this peer or another
type Joined = spi.Joined[actor.Ref]

// Left tells a group member that Member left Group (it called Leave,
// stopped, or its peer went away), with WatchPresence. Its fields:
//
//	Group  string    // the group's name
//	Member actor.Ref // the actor that left, on this peer or another
type Left = spi.Left[actor.Ref]

// Option configures Join.
type Option func(*options)

type options struct{ presence bool }

// WatchPresence makes the member receive Joined and Left messages about
// the group's other members (one Joined for each member already there
// first).
func WatchPresence() Option { return func(o *options) { o.presence = true } }

// Join makes the actor of c a member of group: it receives every message
// broadcast or published to the group, on every peer, once. It leaves
// every group when it stops. Call it from the actor's behavior or
// handlers, as any Context method.
func Join(c *actor.Context, group string, opts ...Option) error {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return hooks.Join(c, group, o.presence)
}

// Leave ends the membership of c's actor of group.
func Leave(c *actor.Context, group string) { hooks.Leave(c, group) }

// Broadcast sends msg from c's actor to every member of group on every
// peer, that actor included when it is a member, once each. It never
// blocks; without a group transport only local members receive it.
func Broadcast(c *actor.Context, group string, msg any) error {
	return hooks.Broadcast(c, group, msg)
}

// Publish sends msg to every member of group, as Broadcast, from plain Go
// code (from may be the zero Ref). Safe for concurrent use.
func Publish(s *actor.System, group string, from actor.Ref, msg any) error {
	return hooks.Publish(s, group, from, msg)
}

// LocalMembers returns the members of group on s, in no order. Safe for
// concurrent use.
func LocalMembers(s *actor.System, group string) []actor.Ref { return hooks.LocalMembers(s, group) }

// Count returns how many actors of s are members of group. Safe for
// concurrent use.
func Count(s *actor.System, group string) int { return hooks.Count(s, group) }

// Names returns the groups that have members on s, sorted. Safe for
// concurrent use.
func Names(s *actor.System) []string { return hooks.Names(s) }
