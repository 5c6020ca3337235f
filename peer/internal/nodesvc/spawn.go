package nodesvc

import (
	"fmt"
	"strings"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
)

// spawnedBy is the node actor's record of the live actors other peers
// spawned: owned by the node actor.
type spawnedBy struct {
	count   map[libp2ppeer.ID]int
	total   int
	watches map[actor.MonitorID]libp2ppeer.ID
	guards  guards
}

// Actor is the node actor's behavior: it answers lookups and spawns. The
// node spawns it under Name.
func (s *Service) Actor(c *actor.Context) {
	sp := spawnedBy{count: make(map[libp2ppeer.ID]int), watches: make(map[actor.MonitorID]libp2ppeer.ID), guards: newGuards()}
	var h actor.Case
	h = actor.Any(func(m any) {
		switch req := m.(type) {
		case whereisReq:
			_, ok := s.cfg.Sys.Whereis(req.Name)
			c.Reply(whereisReply{Found: ok})
		case spawnReq:
			ref, err := s.spawnFor(c, &sp, req)
			if err != nil {
				c.Reply(spawnFailed(err))
			} else {
				c.Reply(spawnReply{Name: ref.Name()})
			}
		case actor.Down:
			if p, ok := sp.watches[req.ID]; ok {
				delete(sp.watches, req.ID)
				sp.total--
				if sp.count[p]--; sp.count[p] <= 0 {
					delete(sp.count, p)
					sp.guards.release(c, p)
				}
				break
			}
			sp.guards.down(req)
		}
		c.Receive(h)
	})
	c.Receive(h)
}

// spawnFor spawns what req, which the handled message's sender sent, asks
// for: within the policy, the name prefix, and the sender's peer's quota
// and the node's total when that is another peer, whose new actor sp then
// counts until it stops (and which stops when that peer is gone, unless
// its behavior outlives its spawner).
func (s *Service) spawnFor(c *actor.Context, sp *spawnedBy, req spawnReq) (actor.Ref, error) {
	sys := s.cfg.Sys
	from := c.Sender().Peer()
	if from == "" || from == sys.Peer() {
		return s.spawnLocal(req, nil)
	}
	p, err := libp2ppeer.Decode(from)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("%w: from %q", ErrSpawnRefused, from)
	}
	if pol := s.cfg.Policy; pol != nil {
		if err := pol(p, req.Behavior); err != nil {
			return actor.Ref{}, fmt.Errorf("%w: %q for %v: %v", ErrSpawnRefused, req.Behavior, p, err)
		}
	}
	if req.Name != "" {
		if _, err := actor.NewRef(sys.Peer(), req.Name); err != nil {
			return actor.Ref{}, err
		}
		if !strings.HasPrefix(req.Name, s.cfg.Names) {
			return actor.Ref{}, fmt.Errorf("%w: name %q: another peer's spawn may take only names beginning with %q, or a generated one", ErrSpawnRefused, req.Name, s.cfg.Names)
		}
	}
	switch {
	case sp.count[p] >= s.cfg.Quota:
		return actor.Ref{}, fmt.Errorf("%w: %d live actors spawned by %v", actor.ErrSystemLimit, sp.count[p], p)
	case sp.total >= s.cfg.Total:
		return actor.Ref{}, fmt.Errorf("%w: %d live actors spawned by other peers", actor.ErrSystemLimit, sp.total)
	}
	guard := func() (actor.Ref, error) { return sp.guards.of(c, p) }
	ref, err := s.spawnLocal(req, guard)
	if err != nil {
		if sp.count[p] == 0 { // a guard made for this spawn guards nothing
			sp.guards.release(c, p)
		}
		return actor.Ref{}, err
	}
	sp.count[p]++
	sp.total++
	sp.watches[c.Monitor(ref)] = p
	return ref, nil
}

// spawnLocal spawns what req asks for and returns the new actor's Ref.
// With guard (another peer's spawn), an actor of a behavior that does not
// outlive its spawner links itself to the spawner's guard first.
func (s *Service) spawnLocal(req spawnReq, guard func() (actor.Ref, error)) (actor.Ref, error) {
	bh, ok := s.behaviors.get(req.Behavior)
	if !ok {
		return actor.Ref{}, fmt.Errorf("%w: %q", ErrUnknownBehavior, req.Behavior)
	}
	args, err := s.cfg.Reg.Decode(req.Args.Type, req.Args.Body)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("spawn arguments: %w", err)
	}
	b, err := bh.f(args)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("behavior %q: %w", req.Behavior, err)
	}
	if guard != nil && !bh.outlives {
		g, err := guard()
		if err != nil {
			return actor.Ref{}, err
		}
		inner := b
		b = func(c *actor.Context) {
			c.Link(g) // a guard gone already: the exit signal comes at once
			inner(c)
		}
	}
	return s.cfg.Sys.Spawn(req.Name, b)
}
