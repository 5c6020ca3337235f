package nodesvc

import (
	"fmt"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
)

// What ties the actors another peer spawned here to that peer: a guard
// actor per spawning peer monitors that peer's node actor; the spawned
// actors link themselves to it as they start (unless their behavior
// outlives its spawner: peer.OutlivesSpawner). When the peer is gone (it disconnects or restarts:
// the monitor's Down comes with actor.ErrNodeDown; or its node actor
// stops) the guard exits with ErrSpawnerGone and the links stop its
// actors. The guard traps exits, so one of them stopping stops no other;
// it retires once its peer has no live actor here.

// guards are the node actor's guards, by spawning peer: owned by the
// node actor.
type guards struct {
	by   map[libp2ppeer.ID]actor.Ref
	mons map[actor.MonitorID]libp2ppeer.ID // the node actor's monitors of its guards
}

func newGuards() guards {
	return guards{by: make(map[libp2ppeer.ID]actor.Ref), mons: make(map[actor.MonitorID]libp2ppeer.ID)}
}

// guardRetire tells a guard to stop (normally: no linked actor stops).
type guardRetire struct{}

// of returns p's guard, spawning it if p has none.
func (g *guards) of(c *actor.Context, p libp2ppeer.ID) (actor.Ref, error) {
	if ref, ok := g.by[p]; ok {
		return ref, nil
	}
	ref, err := c.Spawn("", guardOf(p))
	if err != nil {
		return actor.Ref{}, fmt.Errorf("peer: the guard of %v's actors: %w", p, err)
	}
	g.by[p] = ref
	g.mons[c.Monitor(ref)] = p
	return ref, nil
}

// release retires p's guard: p has no live actor here any more.
func (g *guards) release(c *actor.Context, p libp2ppeer.ID) {
	if ref, ok := g.by[p]; ok {
		delete(g.by, p)
		c.Send(ref, guardRetire{})
	}
}

// down forgets the guard whose monitor d is, if it is still its peer's.
func (g *guards) down(d actor.Down) {
	p, ok := g.mons[d.ID]
	if !ok {
		return
	}
	delete(g.mons, d.ID)
	if g.by[p] == d.Ref {
		delete(g.by, p)
	}
}

// guardOf is the behavior of p's guard.
func guardOf(p libp2ppeer.ID) actor.Behavior {
	return func(c *actor.Context) {
		c.TrapExit(true)
		node, err := actor.NewRef(p.String(), Name)
		if err != nil {
			c.Exit(fmt.Errorf("%w: %v", ErrSpawnerGone, err))
			return
		}
		id := c.Monitor(node)
		c.Receive(actor.Loop(actor.Any(func(m any) {
			switch m := m.(type) {
			case actor.Down:
				if m.ID == id && m.Ref == node {
					c.Exit(fmt.Errorf("%w: %v (%v)", ErrSpawnerGone, p, m.Reason))
				}
			case guardRetire:
				c.Stop()
			} // an Exit of one of its actors: nothing to do
		})))
	}
}
