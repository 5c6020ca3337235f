package peer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
)

// Mesh-wide names (Erlang's global): a peer claims a name for one of its
// actors in its signed advertisement; every peer resolves the claims it
// holds with globalWinner (global_resolve.go). A claim lasts while its
// actor lives and its peer's advertisement does (it goes with the peer:
// departure or expiry).

// Errors of ClaimGlobal.
var (
	// ErrNameTaken: another peer's claim of the name wins.
	ErrNameTaken = errors.New("peer: global name taken")
	// ErrTooManyClaims: the node claims discovery.MaxAdGlobal names already.
	ErrTooManyClaims = errors.New("peer: too many global names claimed")
	// ErrNotLocal: a claim names an actor of another peer.
	ErrNotLocal = errors.New("peer: a global name is claimed for a local actor only")
)

// GlobalNameLost is what the actor that held a mesh-wide name receives
// when the node learns of a claim of the same name that wins (a partition
// healed, or two peers claimed it at once): the name is the Winner's, and
// this actor's claim is withdrawn.
type GlobalNameLost struct {
	Name   string
	Winner actor.Ref
}

// globalNames holds the node's own claims and watches for claims that beat
// them. Safe for concurrent use.
type globalNames struct {
	n *Node

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex           // guards claims
	claims map[string]actor.Ref // name → local actor
}

// globalCheck is how often the claims are checked besides each change of
// the directory (an actor that stopped ends its claim).
const globalCheck = time.Second

func newGlobal(n *Node) *globalNames {
	g := &globalNames{n: n, claims: make(map[string]actor.Ref)}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g
}

// start watches the claims, once the node's directory runs.
func (g *globalNames) start() {
	if g.n.dir != nil {
		g.wg.Go(g.watch)
	}
}

func (g *globalNames) close() {
	g.cancel()
	g.wg.Wait()
}

// ClaimGlobal claims name for the whole mesh for the local actor ref, and
// advertises the claim. It fails with ErrNameTaken when the node knows of
// another peer's claim of name (the error names the holder), ErrNotLocal,
// actor.ErrNoSuchActor (ref is not alive), ErrTooManyClaims, ErrNoDirectory
// without WithGroups, or ctx's error. A claim that a winning claim beats
// later, once the node learns of it, is withdrawn and its actor receives
// GlobalNameLost. The claim ends when the actor stops. Claims are resolved
// from the directory: see docs/scale.md for their limits. Safe for
// concurrent use.
func (n *Node) ClaimGlobal(ctx context.Context, name string, ref actor.Ref) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.dir == nil {
		return ErrNoDirectory
	}
	if ref.Peer() != n.ID().String() {
		return fmt.Errorf("%w: %v", ErrNotLocal, ref)
	}
	if got, ok := n.sys.Whereis(ref.Name()); !ok || got != ref {
		return fmt.Errorf("%w: %v", actor.ErrNoSuchActor, ref)
	}
	if _, err := Ref(n.ID(), name); err != nil { // a global name is a valid actor name
		return err
	}
	g := n.global
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pruneLocked() // claims whose actors stopped end now, not at the next advertisement
	if held, ok := g.claims[name]; ok {
		if held == ref {
			return nil
		}
		return fmt.Errorf("%w: %q by %v", ErrNameTaken, name, held)
	}
	if len(g.claims) >= discovery.MaxAdGlobal {
		return ErrTooManyClaims
	}
	// A name seen held is taken, whoever would win a conflict: the
	// distance decides only between claims made unaware of each other.
	if w, ok := globalWinner(name, n.remoteClaims(name)); ok {
		winner, _ := Ref(w.Peer, w.Actor)
		return fmt.Errorf("%w: %q by %v", ErrNameTaken, name, winner)
	}
	g.claims[name] = ref
	n.dir.Changed()
	return nil
}

// WhereisGlobal returns the actor that holds the mesh-wide name, as this
// node resolves the claims it knows of, and whether one does. Safe for
// concurrent use.
func (n *Node) WhereisGlobal(name string) (actor.Ref, bool) {
	claims := n.remoteClaims(name)
	if ref, ok := n.global.own(name); ok {
		claims = append(claims, globalClaim{Name: name, Peer: n.ID(), Actor: ref.Name()})
	}
	w, ok := globalWinner(name, claims)
	if !ok {
		return actor.Ref{}, false
	}
	ref, err := Ref(w.Peer, w.Actor)
	return ref, err == nil
}

// own returns the local actor that claims name, if it is alive.
func (g *globalNames) own(name string) (actor.Ref, bool) {
	g.mu.Lock()
	ref, ok := g.claims[name]
	g.mu.Unlock()
	if !ok {
		return actor.Ref{}, false
	}
	got, alive := g.n.sys.Whereis(ref.Name())
	return ref, alive && got == ref
}

// remoteClaims returns the other peers' claims of name in the directory
// (every name when name is "").
func (n *Node) remoteClaims(name string) []globalClaim {
	if n.dir == nil {
		return nil
	}
	var out []globalClaim
	for _, ad := range n.dir.Peers() {
		id, err := libp2ppeer.IDFromBytes(ad.Peer)
		if err != nil || id == n.ID() {
			continue
		}
		for _, c := range ad.Global {
			// A claim with a name or actor no Ref can carry would win
			// and resolve to nothing: it is ignored.
			if _, err := Ref(id, c.Actor); err != nil {
				continue
			}
			if _, err := Ref(id, c.Name); err != nil {
				continue
			}
			if name == "" || c.Name == name {
				out = append(out, globalClaim{Name: c.Name, Peer: id, Actor: c.Actor})
			}
		}
	}
	return out
}

// source is what the advertisement claims: the claims whose actor lives
// (those of stopped actors end here).
func (g *globalNames) source() []discovery.GlobalClaim {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pruneLocked()
	out := make([]discovery.GlobalClaim, 0, len(g.claims))
	for name, ref := range g.claims {
		out = append(out, discovery.GlobalClaim{Name: name, Actor: ref.Name()})
	}
	slices.SortFunc(out, func(a, b discovery.GlobalClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// pruneLocked ends the claims whose actors stopped; g.mu is held.
func (g *globalNames) pruneLocked() {
	for name, ref := range g.claims {
		if got, ok := g.n.sys.Whereis(ref.Name()); !ok || got != ref {
			delete(g.claims, name)
		}
	}
}

// watch resolves the node's claims against the others' each time the
// directory changes, and every globalCheck.
func (g *globalNames) watch() {
	t := time.NewTicker(globalCheck)
	defer t.Stop()
	for {
		updated := g.n.dir.Updated()
		g.resolve()
		select {
		case <-g.ctx.Done():
			return
		case <-updated:
		case <-t.C:
		}
	}
}

// resolve withdraws the node's claims that another's beats and tells their
// actors.
func (g *globalNames) resolve() {
	g.mu.Lock()
	none := len(g.claims) == 0
	g.mu.Unlock()
	if none { // the usual case: nothing to scan the directory for
		return
	}
	remote := g.n.remoteClaims("")
	type lost struct {
		to  actor.Ref
		msg GlobalNameLost
	}
	var losses []lost
	g.mu.Lock()
	for name, ref := range g.claims {
		claims := append(slices.Clone(remote), globalClaim{Name: name, Peer: g.n.ID(), Actor: ref.Name()})
		w, _ := globalWinner(name, claims)
		if w.Peer == g.n.ID() {
			continue
		}
		delete(g.claims, name)
		winner, _ := Ref(w.Peer, w.Actor)
		losses = append(losses, lost{ref, GlobalNameLost{Name: name, Winner: winner}})
	}
	g.mu.Unlock()
	for _, l := range losses {
		g.n.sys.Send(l.to, l.msg)
	}
	if len(losses) > 0 {
		g.n.dir.Changed()
	}
}
