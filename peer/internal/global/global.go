package global

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
// holds with globalWinner (resolve.go). A claim lasts while its actor
// lives and its peer's advertisement does (it goes with the peer:
// departure or expiry).

// Errors of Claim, which peer re-exports (peer.ErrNameTaken is
// ErrNameTaken): their texts keep peer's prefix.
var (
	// ErrNameTaken: another peer's claim of the name wins.
	ErrNameTaken = errors.New("peer: global name taken")
	// ErrTooManyClaims: the node claims discovery.MaxAdGlobal names already.
	ErrTooManyClaims = errors.New("peer: too many global names claimed")
	// ErrNotLocal: a claim names an actor of another peer.
	ErrNotLocal = errors.New("peer: a global name is claimed for a local actor only")
)

// errNotStarted: a Claim before Start gave the directory.
var errNotStarted = errors.New("global: no directory yet")

// Directory is what the names need of the node's directory.
type Directory interface {
	// Peers returns the other peers' live advertisements.
	Peers() []*discovery.Advertisement
	// Updated returns a channel closed when the directory next stores
	// an advertisement.
	Updated() <-chan struct{}
	// Changed says the node's own advertisement changed.
	Changed()
}

// Config is what the names need of their node.
type Config struct {
	Sys  *actor.System
	Self libp2ppeer.ID // the node's peer ID
	// Lost makes the message the actor whose claim of name lost to
	// winner's receives (peer.GlobalNameLost).
	Lost func(name string, winner actor.Ref) any
}

// Names holds the node's own claims and watches for claims that beat
// them. Safe for concurrent use.
type Names struct {
	cfg Config
	dir Directory // set by Start, before its goroutine

	ctx  context.Context // the watch's lifetime: ended by Close
	stop context.CancelFunc
	wg   sync.WaitGroup

	// mu guards claims. It is taken before the directory's lock: Claim
	// holds it over Directory.Peers (doc.go).
	mu     sync.Mutex
	claims map[string]actor.Ref // name → local actor
}

// globalCheck is how often the claims are checked besides each change of
// the directory (an actor that stopped ends its claim).
const globalCheck = time.Second

// New returns the names of the node cfg describes; Start gives them the
// node's directory once it runs. Source may be called before.
func New(cfg Config) *Names {
	g := &Names{cfg: cfg, claims: make(map[string]actor.Ref)}
	g.ctx, g.stop = context.WithCancel(context.Background())
	return g
}

// Start watches the claims against the others' in dir, until Close. It
// is called once, before Claim and before the node is used.
func (g *Names) Start(dir Directory) {
	g.dir = dir
	g.wg.Go(g.watch)
}

// Close stops the watch (if Start started it) and waits for it. It is
// idempotent.
func (g *Names) Close() {
	g.stop()
	g.wg.Wait()
}

// refOf is the Ref of actor name on peer id.
func refOf(id libp2ppeer.ID, name string) (actor.Ref, error) { return actor.NewRef(id.String(), name) }

// Claim claims name for the whole mesh for the local actor ref, and has the
// directory advertise the claim: peer.Node.ClaimGlobal, which lists its
// errors. A claim that a winning claim beats later is withdrawn and its
// actor receives Config.Lost's message.
func (g *Names) Claim(name string, ref actor.Ref) error {
	if g.dir == nil {
		return errNotStarted
	}
	self := g.cfg.Self
	if ref.Peer() != self.String() {
		return fmt.Errorf("%w: %v", ErrNotLocal, ref)
	}
	if got, ok := g.cfg.Sys.Whereis(ref.Name()); !ok || got != ref {
		return fmt.Errorf("%w: %v", actor.ErrNoSuchActor, ref)
	}
	if _, err := refOf(self, name); err != nil { // a global name is a valid actor name
		return err
	}
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
	if w, ok := globalWinner(name, g.remoteClaims(name)); ok {
		winner, _ := refOf(w.Peer, w.Actor)
		return fmt.Errorf("%w: %q by %v", ErrNameTaken, name, winner)
	}
	g.claims[name] = ref
	g.dir.Changed()
	return nil
}

// Whereis returns the actor that holds the mesh-wide name, as this node
// resolves the claims it knows of, and whether one does.
func (g *Names) Whereis(name string) (actor.Ref, bool) {
	claims := g.remoteClaims(name)
	if ref, ok := g.own(name); ok {
		claims = append(claims, globalClaim{Name: name, Peer: g.cfg.Self, Actor: ref.Name()})
	}
	w, ok := globalWinner(name, claims)
	if !ok {
		return actor.Ref{}, false
	}
	ref, err := refOf(w.Peer, w.Actor)
	return ref, err == nil
}

// own returns the local actor that claims name, if it is alive.
func (g *Names) own(name string) (actor.Ref, bool) {
	g.mu.Lock()
	ref, ok := g.claims[name]
	g.mu.Unlock()
	if !ok {
		return actor.Ref{}, false
	}
	got, alive := g.cfg.Sys.Whereis(ref.Name())
	return ref, alive && got == ref
}

// remoteClaims returns the other peers' claims of name in the directory
// (every name when name is "").
func (g *Names) remoteClaims(name string) []globalClaim {
	if g.dir == nil {
		return nil
	}
	var out []globalClaim
	for _, ad := range g.dir.Peers() {
		id, err := libp2ppeer.IDFromBytes(ad.Peer)
		if err != nil || id == g.cfg.Self {
			continue
		}
		for _, c := range ad.Global {
			// A claim with a name or actor no Ref can carry would win
			// and resolve to nothing: it is ignored.
			if _, err := refOf(id, c.Actor); err != nil {
				continue
			}
			if _, err := refOf(id, c.Name); err != nil {
				continue
			}
			if name == "" || c.Name == name {
				out = append(out, globalClaim{Name: c.Name, Peer: id, Actor: c.Actor})
			}
		}
	}
	return out
}

// Source is what the advertisement claims (discovery.WithClaims): the
// claims whose actor lives (those of stopped actors end here).
func (g *Names) Source() []discovery.GlobalClaim {
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
func (g *Names) pruneLocked() {
	for name, ref := range g.claims {
		if got, ok := g.cfg.Sys.Whereis(ref.Name()); !ok || got != ref {
			delete(g.claims, name)
		}
	}
}

// watch resolves the node's claims against the others' each time the
// directory changes, and every globalCheck.
func (g *Names) watch() {
	t := time.NewTicker(globalCheck)
	defer t.Stop()
	for {
		updated := g.dir.Updated()
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
func (g *Names) resolve() {
	g.mu.Lock()
	none := len(g.claims) == 0
	g.mu.Unlock()
	if none { // the usual case: nothing to scan the directory for
		return
	}
	remote := g.remoteClaims("")
	type lost struct {
		to  actor.Ref
		msg any
	}
	var losses []lost
	g.mu.Lock()
	for name, ref := range g.claims {
		claims := append(slices.Clone(remote), globalClaim{Name: name, Peer: g.cfg.Self, Actor: ref.Name()})
		w, _ := globalWinner(name, claims)
		if w.Peer == g.cfg.Self {
			continue
		}
		delete(g.claims, name)
		winner, _ := refOf(w.Peer, w.Actor)
		losses = append(losses, lost{ref, g.cfg.Lost(name, winner)})
	}
	g.mu.Unlock()
	for _, l := range losses {
		g.cfg.Sys.Send(l.to, l.msg)
	}
	if len(losses) > 0 {
		g.dir.Changed()
	}
}
