package actor

import (
	"fmt"

	"github.com/troupe-mesh/troupe/actor/eventloop"
	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// The transport SPI's side in actor: package actor/transport calls these
// through spi.Actor, and package actor/group through spi.Group (set here,
// before their initialization runs, since they import actor).

func init() {
	spi.Actor = &spi.Hooks[System, Ref, Option, SpawnOption]{
		NewSystem:           newSystem,
		Deliver:             func(s *System, e envelope) { s.port.Deliver(e) },
		DeliverBatch:        func(s *System, es []envelope) { s.port.DeliverBatch(es) },
		Bounce:              func(s *System, e envelope, reason error) { s.port.Bounce(e, reason) },
		PeerDown:            func(s *System, peer string) { s.port.PeerDown(peer) },
		ShedSaved:           func(s *System, cr *spi.Credit) int { return s.port.ShedSaved(cr) },
		AcceptsUnknownTypes: func(s *System, to Ref) bool { return s.port.AcceptsUnknownTypes(to) },
		NewInbound:          newInboundHooks,
		DeliverPresence: func(s *System, group string, member Ref, joined bool) bool {
			return s.port.DeliverPresence(group, member, joined)
		},
		PeerLeftGroups:     func(s *System, peer string) { s.port.PeerLeftGroups(peer) },
		ForgetGroupMembers: func(s *System, group string) { s.port.ForgetGroupMembers(group) },
		RemoteMembers:      func(s *System) map[string][]Ref { return s.port.RemoteMembers() },
		DeliverGroup: func(s *System, group string, from Ref, msg any) int {
			return s.port.DeliverGroup(group, from, msg)
		},
		RemoteBacklog:    withRemoteBacklog,
		RemoteWatchLimit: withRemoteWatchLimit,
		RemoteWatchTotal: withRemoteWatchTotal,
		NamesChanged:     withNamesChanged,
		RemoteEdges:      (*System).remoteEdges,
		RemoteWatches:    (*System).remoteWatches,
		Loops:            func(s *System) *eventloop.Group { return s.group },
		SystemName:       systemName,
	}
	spi.Group = &spi.GroupHooks[Context, System, Ref]{
		Join:         (*Context).join,
		Leave:        (*Context).leave,
		Broadcast:    (*Context).broadcast,
		Publish:      (*System).publish,
		LocalMembers: (*System).localMembers,
		Count:        (*System).groupMembers,
		Names:        (*System).groupNames,
	}
}

// newInboundHooks returns a new inbound of s as the functions that
// transport.Inbound calls (made once per inbound, a stream's lifetime).
func newInboundHooks(s *System) spi.Inbound[Ref] {
	in := s.port.NewInbound()
	return spi.Inbound[Ref]{
		Add:       func(e envelope) { in.Add(&e) },
		Len:       in.Len,
		Flush:     in.Flush,
		Close:     in.Close,
		SetCredit: in.SetCredit,
	}
}

// bind asks the transport's factory for the system's remote and group
// transport and installs them.
func (s *System) bind(f func(*System) (remote, groups any, err error)) error {
	r, g, err := f(s)
	if err != nil {
		return err
	}
	if r != nil {
		rt, ok := r.(remoteTransport)
		if !ok {
			return fmt.Errorf("actor: remote %T has no Deliver method", r)
		}
		s.cfg.remote = rt
	}
	if g != nil {
		gt, ok := g.(groupTransport)
		if !ok {
			return fmt.Errorf("actor: group transport %T lacks GroupTransport's methods", g)
		}
		s.cfg.groups = gt
	}
	return nil
}
