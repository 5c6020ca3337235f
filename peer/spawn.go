package peer

import (
	"errors"
	"fmt"
	"strings"

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
// actor counts until it stops (which, unless its behavior
// OutlivesSpawner, it does when its spawner is gone).
func WithRemoteSpawnQuota(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("remote spawn quota %d must not be negative", n)
		}
		c.spawnQuota = n
		return nil
	}
}

// DefaultRemoteSpawnTotal is the number of live actors all other peers
// together may have spawned on a node unless WithRemoteSpawnTotal says
// otherwise.
const DefaultRemoteSpawnTotal = 10_000

// WithRemoteSpawnTotal caps the live actors all other peers together may
// have spawned on this node (default DefaultRemoteSpawnTotal), so that
// many identities, each within WithRemoteSpawnQuota, cannot add up. A
// spawn beyond it fails with actor.ErrSystemLimit.
func WithRemoteSpawnTotal(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("remote spawn total %d must not be negative", n)
		}
		c.spawnTotal = n
		return nil
	}
}

// DefaultRemoteSpawnNames is the prefix of the names a remote spawn may
// ask for unless WithRemoteSpawnNames says otherwise: another peer cannot
// take a name that this node's own code means to Spawn (say "payments"),
// nor pass for one of its services; a spawn may always ask for a
// generated name ("").
const DefaultRemoteSpawnNames = "remote."

// WithRemoteSpawnNames sets the prefix that a name a remote spawn asks
// for must begin with (default DefaultRemoteSpawnNames); a spawn asking
// for another name fails with ErrSpawnRefused. "" lets other peers take
// any free name. Generated names are always allowed.
func WithRemoteSpawnNames(prefix string) Option {
	return func(c *config) error { c.spawnNames = prefix; return nil }
}

// BehaviorOption configures a behavior registered with
// Node.RegisterBehavior.
type BehaviorOption func(*behaviorConfig)

type behaviorConfig struct {
	outlives bool
}

// OutlivesSpawner lets the actors another peer spawned with the behavior
// live on when that peer is gone (disconnected, restarted, or its node
// actor stopped). Without it they receive an exit signal with reason
// ErrSpawnerGone, which stops them unless they trap exits; "gone" is a
// Down of that peer's node actor, which a connection down for a moment
// also brings (as a monitor's of any other peer).
func OutlivesSpawner() BehaviorOption {
	return func(c *behaviorConfig) { c.outlives = true }
}

// spawnedBy is the node actor's record of the live actors other peers
// spawned: owned by the node actor.
type spawnedBy struct {
	count   map[libp2ppeer.ID]int
	total   int
	watches map[actor.MonitorID]libp2ppeer.ID
	guards  guards
}

// nodeActor answers lookups and spawns.
func (n *Node) nodeActor(c *actor.Context) {
	sp := spawnedBy{count: make(map[libp2ppeer.ID]int), watches: make(map[actor.MonitorID]libp2ppeer.ID), guards: newGuards()}
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
// its behavior OutlivesSpawner).
func (n *Node) spawnFor(c *actor.Context, sp *spawnedBy, req spawnReq) (actor.Ref, error) {
	from := c.Sender().Peer()
	if from == "" || from == n.sys.Peer() {
		return n.spawnLocal(req, nil)
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
	if req.Name != "" {
		if _, err := actor.NewRef(n.sys.Peer(), req.Name); err != nil {
			return actor.Ref{}, err
		}
		if !strings.HasPrefix(req.Name, n.cfg.spawnNames) {
			return actor.Ref{}, fmt.Errorf("%w: name %q: another peer's spawn may take only names beginning with %q, or a generated one", ErrSpawnRefused, req.Name, n.cfg.spawnNames)
		}
	}
	switch {
	case sp.count[p] >= n.cfg.spawnQuota:
		return actor.Ref{}, fmt.Errorf("%w: %d live actors spawned by %v", actor.ErrSystemLimit, sp.count[p], p)
	case sp.total >= n.cfg.spawnTotal:
		return actor.Ref{}, fmt.Errorf("%w: %d live actors spawned by other peers", actor.ErrSystemLimit, sp.total)
	}
	guard := func() (actor.Ref, error) { return sp.guards.of(c, p) }
	ref, err := n.spawnLocal(req, guard)
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
func (n *Node) spawnLocal(req spawnReq, guard func() (actor.Ref, error)) (actor.Ref, error) {
	bh, ok := n.behaviors.get(req.Behavior)
	if !ok {
		return actor.Ref{}, fmt.Errorf("%w: %q", ErrUnknownBehavior, req.Behavior)
	}
	args, err := n.reg.Decode(req.Args.Type, req.Args.Body)
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
	return n.sys.Spawn(req.Name, b)
}
