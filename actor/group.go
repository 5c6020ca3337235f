package actor

import (
	"errors"
	"fmt"
	"sync"
)

// ErrNoGroups: the system has no group transport and the group has no local
// member, or a group name is empty.
var ErrNoGroups = errors.New("actor: no such group")

// GroupTransport carries group messages between peers (routing implements
// it on GossipSub). Its methods are called on event loops and must not
// block on the network.
type GroupTransport interface {
	// JoinGroup is called when the first local actor joins group.
	JoinGroup(group string) error
	// LeaveGroup is called when the last local actor left group.
	LeaveGroup(group string)
	// PublishGroup sends msg from `from` to every member of group on every
	// peer; the transport hands it back to this system's members too, with
	// System.DeliverGroup.
	PublishGroup(group string, from Ref, msg any) error
}

// WithGroups sets the transport of group messages. Without one, groups are
// local to the system.
func WithGroups(t GroupTransport) Option { return func(c *config) error { c.groups = t; return nil } }

// groupTable is the local membership of groups. Membership changes are
// rare; broadcasts read it.
type groupTable struct {
	mu      sync.RWMutex // guards members
	members map[string]map[*Context]struct{}
}

// Join makes this actor a member of group: it receives every message
// broadcast or published to the group, on every peer, once. It leaves
// every group when it stops.
func (c *Context) Join(group string) error {
	if group == "" {
		return fmt.Errorf("%w: empty group name", ErrNoGroups)
	}
	t := &c.sys.groups
	t.mu.Lock()
	if t.members == nil {
		t.members = make(map[string]map[*Context]struct{})
	}
	m := t.members[group]
	first := m == nil
	if first {
		m = make(map[*Context]struct{})
		t.members[group] = m
	}
	m[c] = struct{}{}
	t.mu.Unlock()
	e := c.extra()
	if e.groups == nil {
		e.groups = make(map[string]struct{})
	}
	e.groups[group] = struct{}{}
	if first && c.sys.cfg.groups != nil {
		if err := c.sys.cfg.groups.JoinGroup(group); err != nil {
			c.Leave(group)
			return fmt.Errorf("actor: join %q: %w", group, err)
		}
	}
	return nil
}

// Leave ends this actor's membership of group.
func (c *Context) Leave(group string) {
	if c.ext != nil {
		delete(c.ext.groups, group)
	}
	t := &c.sys.groups
	t.mu.Lock()
	m := t.members[group]
	_, was := m[c]
	delete(m, c)
	last := was && len(m) == 0
	if last {
		delete(t.members, group)
	}
	t.mu.Unlock()
	if last && c.sys.cfg.groups != nil {
		c.sys.cfg.groups.LeaveGroup(group)
	}
}

// Broadcast sends msg to every member of group on every peer, this actor
// included when it is a member, once each. It never blocks; without a group
// transport only local members receive it.
func (c *Context) Broadcast(group string, msg any) error {
	return c.sys.Publish(group, c.Self(), msg)
}

// Publish sends msg to every member of group, as Broadcast, from plain Go
// code (from may be the zero Ref). Safe for concurrent use.
func (s *System) Publish(group string, from Ref, msg any) error {
	if group == "" {
		return fmt.Errorf("%w: empty group name", ErrNoGroups)
	}
	if s.cfg.groups != nil {
		return s.cfg.groups.PublishGroup(group, from, msg)
	}
	if s.DeliverGroup(group, from, msg) == 0 {
		return fmt.Errorf("%w: %q", ErrNoGroups, group)
	}
	return nil
}

// DeliverGroup hands a group message to every local member and returns how
// many there were. The group transport calls it. Safe for concurrent use.
func (s *System) DeliverGroup(group string, from Ref, msg any) int {
	s.groups.mu.RLock()
	members := make([]*Context, 0, len(s.groups.members[group]))
	for c := range s.groups.members[group] {
		members = append(members, c)
	}
	s.groups.mu.RUnlock()
	for _, c := range members {
		n := s.newNode(msg, from, 0, kindUser)
		if !c.push(n) {
			s.free(n)
		}
	}
	return len(members)
}

// GroupMembers returns how many local actors are members of group.
func (s *System) GroupMembers(group string) int {
	s.groups.mu.RLock()
	defer s.groups.mu.RUnlock()
	return len(s.groups.members[group])
}
