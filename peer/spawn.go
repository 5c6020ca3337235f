package peer

import (
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/peer/internal/nodesvc"
)

// ErrSpawnRefused reports a remote spawn that the asked node's spawn
// policy (WithSpawnPolicy) refused.
var ErrSpawnRefused = nodesvc.ErrSpawnRefused

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

// ErrSpawnerGone is the exit reason of the actors another peer spawned
// when that peer is gone (see OutlivesSpawner).
var ErrSpawnerGone = nodesvc.ErrSpawnerGone
