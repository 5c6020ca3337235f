package peer

import (
	"errors"
	"fmt"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
)

// ErrSpawnRefused reports a remote spawn that the asked node's spawn
// policy (WithSpawnPolicy) refused.
var ErrSpawnRefused = errors.New("peer: remote spawn refused")

// DefaultRemoteSpawnQuota is the number of live actors each other peer
// may have spawned on a node unless WithRemoteSpawnQuota says otherwise.
const DefaultRemoteSpawnQuota = 1000

// SpawnPolicy decides whether peer from may spawn the behavior registered
// as behavior on this node: a non-nil error refuses (the caller's
// SpawnRemote fails with an error matching ErrSpawnRefused, with the
// error's text). It runs on the node actor's event loop: it must be
// quick and must not block.
type SpawnPolicy func(from libp2ppeer.ID, behavior string) error

// WithSpawnPolicy sets the policy consulted for every spawn another peer
// asks for, before the quota and the behavior's factory (default: every
// registered behavior, within the quota).
func WithSpawnPolicy(p SpawnPolicy) Option {
	return func(c *config) error { c.spawnPolicy = p; return nil }
}

// WithRemoteSpawnQuota caps the live actors each other peer may have
// spawned on this node (default DefaultRemoteSpawnQuota; 0 refuses every
// remote spawn). A spawn beyond it fails with actor.ErrSystemLimit; an
// actor counts until it stops, whether or not its spawner is still
// connected.
func WithRemoteSpawnQuota(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("remote spawn quota %d must not be negative", n)
		}
		c.spawnQuota = n
		return nil
	}
}

// spawnedBy is the node actor's record of the live actors other peers
// spawned: owned by the node actor.
type spawnedBy struct {
	count   map[libp2ppeer.ID]int
	watches map[actor.MonitorID]libp2ppeer.ID
}

// nodeActor answers lookups and spawns.
func (n *Node) nodeActor(c *actor.Context) {
	sp := spawnedBy{count: make(map[libp2ppeer.ID]int), watches: make(map[actor.MonitorID]libp2ppeer.ID)}
	var h actor.Case
	h = actor.Any(func(m any) {
		switch req := m.(type) {
		case whereisReq:
			_, ok := n.sys.Whereis(req.Name)
			c.Reply(whereisReply{Found: ok})
		case spawnReq:
			ref, err := n.spawnFor(c, &sp, req)
			if err != nil {
				c.Reply(spawnFailed(err))
			} else {
				c.Reply(spawnReply{Name: ref.Name()})
			}
		case actor.Down:
			if p, ok := sp.watches[req.ID]; ok {
				delete(sp.watches, req.ID)
				if sp.count[p]--; sp.count[p] <= 0 {
					delete(sp.count, p)
				}
			}
		}
		c.Receive(h)
	})
	c.Receive(h)
}

// spawnFor spawns what req, which the handled message's sender sent, asks
// for: within the policy and the sender's peer's quota when that is
// another peer, whose new actor sp then counts until it stops.
func (n *Node) spawnFor(c *actor.Context, sp *spawnedBy, req spawnReq) (actor.Ref, error) {
	from := c.Sender().Peer()
	if from == "" || from == n.sys.Peer() {
		return n.spawnLocal(req)
	}
	p, err := libp2ppeer.Decode(from)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("%w: from %q", ErrSpawnRefused, from)
	}
	if pol := n.cfg.spawnPolicy; pol != nil {
		if err := pol(p, req.Behavior); err != nil {
			return actor.Ref{}, fmt.Errorf("%w: %q for %v: %v", ErrSpawnRefused, req.Behavior, p, err)
		}
	}
	if sp.count[p] >= n.cfg.spawnQuota {
		return actor.Ref{}, fmt.Errorf("%w: %d live actors spawned by %v", actor.ErrSystemLimit, sp.count[p], p)
	}
	ref, err := n.spawnLocal(req)
	if err != nil {
		return actor.Ref{}, err
	}
	sp.count[p]++
	sp.watches[c.Monitor(ref)] = p
	return ref, nil
}

// spawnLocal spawns what req asks for and returns the new actor's Ref.
func (n *Node) spawnLocal(req spawnReq) (actor.Ref, error) {
	f := n.behaviors.get(req.Behavior)
	if f == nil {
		return actor.Ref{}, fmt.Errorf("%w: %q", ErrUnknownBehavior, req.Behavior)
	}
	args, err := n.reg.Decode(req.Args.Type, req.Args.Body)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("spawn arguments: %w", err)
	}
	b, err := f(args)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("behavior %q: %w", req.Behavior, err)
	}
	return n.sys.Spawn(req.Name, b)
}
