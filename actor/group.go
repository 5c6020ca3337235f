package actor

import (
	"fmt"
	"sync"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Groups: the membership table and what package actor/group calls
// (through the hooks in spi.go); the API is that package's.

// errNoGroups is group.ErrNoGroups.
var errNoGroups = spi.ErrNoGroups

// joinedMsg and leftMsg are group.Joined and group.Left.
type (
	joinedMsg = spi.Joined[Ref]
	leftMsg   = spi.Left[Ref]
)

// groupTable is the local membership of groups. Membership changes are
// rare; broadcasts read it.
type groupTable struct {
	mu      sync.RWMutex                 // guards members and remote
	members map[string]map[*Context]bool // member -> it watches presence
	remote  map[string]map[Ref]struct{}  // members on other peers, as announced
}

// join is group.Join: presence is group.WatchPresence.
func (c *Context) join(group string, presence bool) error {
	if group == "" {
		return fmt.Errorf("%w: empty group name", errNoGroups)
	}
	c.flushRun() // what it sent goes before its Joined
	t := &c.sys.groups
	t.mu.Lock()
	if t.members == nil {
		t.members = make(map[string]map[*Context]bool)
	}
	m := t.members[group]
	first := m == nil
	if first {
		m = make(map[*Context]bool)
		t.members[group] = m
	}
	_, again := m[c]
	var others []Ref
	if !again && presence {
		for o := range m {
			others = append(others, o.Self())
		}
		for r := range t.remote[group] {
			others = append(others, r)
		}
	}
	m[c] = presence
	self := c.Self()
	if !again {
		// Told under the lock, like every presence change: each watcher
		// then learns of the members in the order the table changed,
		// and of each change once (a member that joined just before
		// this one is in the snapshot, not told again).
		c.sys.presenceLocked(group, self, joinedMsg{Group: group, Member: self}, c)
		for _, o := range others {
			c.sys.deliverTo(c, o, joinedMsg{Group: group, Member: o})
		}
	}
	t.mu.Unlock()
	if again {
		return nil
	}
	e := c.extra()
	if e.groups == nil {
		e.groups = make(map[string]struct{})
	}
	e.groups[group] = struct{}{}
	if gt := c.sys.cfg.groups; gt != nil {
		if first {
			if err := gt.JoinGroup(group); err != nil {
				c.leave(group)
				return fmt.Errorf("actor: join %q: %w", group, err)
			}
		}
		gt.AnnounceGroup(group, self, true)
	}
	return nil
}

// leave is group.Leave.
func (c *Context) leave(group string) {
	if c.ext != nil {
		delete(c.ext.groups, group)
	}
	c.flushRun() // what it sent goes before its Left
	t := &c.sys.groups
	t.mu.Lock()
	m := t.members[group]
	_, was := m[c]
	delete(m, c)
	last := was && len(m) == 0
	if last {
		delete(t.members, group)
	}
	self := c.Self()
	if was {
		c.sys.presenceLocked(group, self, leftMsg{Group: group, Member: self}, nil)
	}
	t.mu.Unlock()
	if !was {
		return
	}
	if gt := c.sys.cfg.groups; gt != nil {
		gt.AnnounceGroup(group, self, false)
		if last {
			gt.LeaveGroup(group)
		}
	}
}

// presenceLocked delivers a Joined or Left about member to the local
// members of group that watch presence, except skip. The caller holds
// s.groups.mu for writing and made the change it reports: delivering
// under the lock keeps every watcher's news in the table's order
// (pushing onto a mailbox never blocks).
func (s *System) presenceLocked(group string, member Ref, msg any, skip *Context) {
	for c, watch := range s.groups.members[group] {
		if watch && c != skip {
			s.deliverTo(c, member, msg)
		}
	}
}

// deliverTo pushes msg from `from` into c's mailbox.
func (s *System) deliverTo(c *Context, from Ref, msg any) {
	n := s.newNode(msg, from, 0, kindUser)
	if !c.push(n) {
		s.free(n)
	}
}

// DeliverPresence records that member, an actor of another peer, joined
// (joined true) or left group, and tells the local members when that is
// news. It reports whether it was. The group transport calls it. Safe for
// concurrent use.
func (p *port) DeliverPresence(group string, member Ref, joined bool) bool {
	s := p.s
	t := &s.groups
	t.mu.Lock()
	r := t.remote[group]
	_, known := r[member]
	switch {
	case joined && !known && len(t.members[group]) == 0:
		// No local member: the transport is leaving the group (see
		// ForgetGroupMembers) and would not hear the member leave.
		t.mu.Unlock()
		return false
	case joined && !known:
		if r == nil {
			if t.remote == nil {
				t.remote = make(map[string]map[Ref]struct{})
			}
			r = make(map[Ref]struct{})
			t.remote[group] = r
		}
		r[member] = struct{}{}
	case !joined && known:
		delete(r, member)
		if len(r) == 0 {
			delete(t.remote, group)
		}
	default:
		t.mu.Unlock()
		return false
	}
	if joined {
		s.presenceLocked(group, member, joinedMsg{Group: group, Member: member}, nil)
	} else {
		s.presenceLocked(group, member, leftMsg{Group: group, Member: member}, nil)
	}
	t.mu.Unlock()
	return true
}

// PeerLeftGroups reports as Left every group member of peer: the group
// transport calls it when the peer disconnects. Safe for concurrent use.
func (p *port) PeerLeftGroups(peer string) {
	s := p.s
	t := &s.groups
	t.mu.RLock()
	var gone []leftMsg
	for g, r := range t.remote {
		for m := range r {
			if m.Peer() == peer {
				gone = append(gone, leftMsg{Group: g, Member: m})
			}
		}
	}
	t.mu.RUnlock()
	for _, l := range gone {
		s.port.DeliverPresence(l.Group, l.Member, false)
	}
}

// ForgetGroupMembers forgets the members of group on other peers unless
// the group has a local member again: the group transport calls it when it
// stops listening to the group, after its last local member left, because
// it would not hear of them leaving. (A member that joins later learns of
// them again, as the transport announces them anew.) Safe for concurrent
// use.
func (p *port) ForgetGroupMembers(group string) {
	s := p.s
	t := &s.groups
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.members[group]) == 0 {
		delete(t.remote, group)
	}
}

// localMembers is group.LocalMembers.
func (s *System) localMembers(group string) []Ref {
	s.groups.mu.RLock()
	defer s.groups.mu.RUnlock()
	out := make([]Ref, 0, len(s.groups.members[group]))
	for c := range s.groups.members[group] {
		out = append(out, c.Self())
	}
	return out
}

// RemoteMembers returns, for every group, the members on other peers that
// this system knows of (see DeliverPresence). Safe for concurrent use.
func (p *port) RemoteMembers() map[string][]Ref {
	s := p.s
	s.groups.mu.RLock()
	defer s.groups.mu.RUnlock()
	out := make(map[string][]Ref, len(s.groups.remote))
	for g, r := range s.groups.remote {
		for m := range r {
			out[g] = append(out[g], m)
		}
	}
	return out
}

// broadcast is group.Broadcast: publish from c's actor, after what it
// sent before (its run: a member it sent to gets those messages first).
func (c *Context) broadcast(group string, msg any) error {
	c.flushRun()
	return c.sys.publish(group, c.Self(), msg)
}

// publish is group.Publish (and group.Broadcast, from c.Self()).
func (s *System) publish(group string, from Ref, msg any) error {
	if group == "" {
		return fmt.Errorf("%w: empty group name", errNoGroups)
	}
	if s.cfg.groups != nil {
		return s.cfg.groups.PublishGroup(group, from, msg)
	}
	if s.port.DeliverGroup(group, from, msg) == 0 {
		return fmt.Errorf("%w: %q", errNoGroups, group)
	}
	return nil
}

// DeliverGroup hands a group message to every local member and returns how
// many there were. The group transport calls it. Safe for concurrent use.
func (p *port) DeliverGroup(group string, from Ref, msg any) int {
	s := p.s
	s.groups.mu.RLock()
	members := make([]*Context, 0, len(s.groups.members[group]))
	for c := range s.groups.members[group] {
		members = append(members, c)
	}
	s.groups.mu.RUnlock()
	for _, c := range members {
		s.deliverTo(c, from, msg)
	}
	return len(members)
}

// groupMembers is group.Count.
func (s *System) groupMembers(group string) int {
	s.groups.mu.RLock()
	defer s.groups.mu.RUnlock()
	return len(s.groups.members[group])
}
