package spi

import "errors"

// ErrNoGroups is group.ErrNoGroups (actor returns it).
var ErrNoGroups = errors.New("actor: no such group")

// Joined tells a group member that Member joined Group (group.Joined is
// Joined[actor.Ref]; it documents the fields).
type Joined[R any] struct {
	Group  string
	Member R
}

// Left tells a group member that Member left Group (group.Left).
type Left[R any] struct {
	Group  string
	Member R
}

// GroupHooks are the functions of package actor that package actor/group
// calls, with C actor.Context, S actor.System and R actor.Ref. Actor's
// init stores a *GroupHooks[actor.Context, actor.System, actor.Ref] in
// Group.
type GroupHooks[C, S, R any] struct {
	Join         func(c *C, group string, presence bool) error
	Leave        func(c *C, group string)
	Broadcast    func(c *C, group string, msg any) error
	Publish      func(s *S, group string, from R, msg any) error
	LocalMembers func(s *S, group string) []R
	Count        func(s *S, group string) int
	Names        func(s *S) []string
}

// Group is the *GroupHooks that actor's init sets.
var Group any
