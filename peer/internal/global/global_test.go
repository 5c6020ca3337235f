package global

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// fakeDir is a directory whose advertisements the test sets.
type fakeDir struct {
	mu      sync.Mutex
	ads     []*discovery.Advertisement
	updated chan struct{}
	changed atomic.Int32
}

func newFakeDir() *fakeDir { return &fakeDir{updated: make(chan struct{})} }

func (d *fakeDir) Peers() []*discovery.Advertisement {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*discovery.Advertisement(nil), d.ads...)
}

func (d *fakeDir) Updated() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.updated
}

func (d *fakeDir) Changed() { d.changed.Add(1) }

func (d *fakeDir) store(ad *discovery.Advertisement) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ads = append(d.ads, ad)
	close(d.updated)
	d.updated = make(chan struct{})
}

type lostMsg struct {
	name   string
	winner actor.Ref
}

// TestClaimBeatenIsWithdrawn: a local claim is advertised and resolves
// to its actor; a claim of another peer's actor is refused; once the
// directory holds a winning claim of the same name, the local claim is
// withdrawn, its actor receives Lost's message naming the winner, the
// advertisement changes, and the name is taken.
func TestClaimBeatenIsWithdrawn(t *testing.T) {
	self := testhost.NewPeerID(t)
	key := globalKey("leader")
	var winner libp2ppeer.ID
	for winner == "" { // a peer nearer the name's key than self
		p := testhost.NewPeerID(t)
		dp, ds := globalDistance(key, p), globalDistance(key, self)
		if bytes.Compare(dp[:], ds[:]) < 0 {
			winner = p
		}
	}
	sys, err := actor.New(actor.WithPeer(self.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(t.Context()) }()
	got := make(chan any, 1)
	holder, err := sys.Spawn("holder", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) { got <- m })))
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := newFakeDir()
	g := New(Config{Sys: sys, Self: self, Lost: func(name string, w actor.Ref) any { return lostMsg{name, w} }})
	if err := g.Claim("leader", holder); !errors.Is(err, errNotStarted) {
		t.Fatalf("a claim before Start: %v", err)
	}
	g.Start(dir)
	defer g.Close()

	if err := g.Claim("leader", holder); err != nil {
		t.Fatal(err)
	}
	if src := g.Source(); len(src) != 1 || src[0] != (discovery.GlobalClaim{Name: "leader", Actor: "holder"}) {
		t.Fatalf("advertised %v", src)
	}
	if ref, ok := g.Whereis("leader"); !ok || ref != holder {
		t.Fatalf("Whereis(leader) = %v, %v; want %v", ref, ok, holder)
	}
	theirs, _ := refOf(winner, "w")
	if err := g.Claim("mine", theirs); !errors.Is(err, ErrNotLocal) {
		t.Fatalf("a claim of another peer's actor: %v", err)
	}

	before := dir.changed.Load()
	dir.store(&discovery.Advertisement{Peer: []byte(winner), Global: []discovery.GlobalClaim{{Name: "leader", Actor: "w"}}})
	select {
	case m := <-got:
		if m != (lostMsg{"leader", theirs}) {
			t.Fatalf("the holder received %#v, want the loss to %v", m, theirs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the beaten claim's actor was not told within 5 s")
	}
	if ref, ok := g.Whereis("leader"); !ok || ref != theirs {
		t.Fatalf("after the loss Whereis(leader) = %v, %v; want %v", ref, ok, theirs)
	}
	if src := g.Source(); len(src) != 0 {
		t.Fatalf("a withdrawn claim still advertised: %v", src)
	}
	// resolve tells the directory after the actors.
	testutil.Eventually(t, 5*time.Second, "the advertisement told of the withdrawal", func() bool { return dir.changed.Load() != before })
	if err := g.Claim("leader", holder); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("claiming a name seen held: %v, want ErrNameTaken", err)
	}
}

// TestCloseIsIdempotent: Close ends the watch and may be called again,
// started or not, as the other services' Closes may.
func TestCloseIsIdempotent(t *testing.T) {
	sys, err := actor.New(actor.WithPeer(testhost.NewPeerID(t).String()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(t.Context()) }()
	unstarted := New(Config{Sys: sys, Self: testhost.NewPeerID(t)})
	unstarted.Close()
	unstarted.Close()
	g := New(Config{Sys: sys, Self: testhost.NewPeerID(t)})
	g.Start(newFakeDir())
	g.Close()
	g.Close()
}
