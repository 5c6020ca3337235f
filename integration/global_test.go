package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
)

// holder spawns an actor on n that passes on the GlobalNameLost it gets
// and stops at its first Ping.
func holder(t *testing.T, n *peer.Node, name string) (actor.Ref, <-chan peer.GlobalNameLost) {
	t.Helper()
	lost := make(chan peer.GlobalNameLost, 4)
	ref := spawn(t, n, name, func(c *actor.Context) {
		var cases []actor.Case
		cases = []actor.Case{
			actor.On(func(m peer.GlobalNameLost) { lost <- m; c.Receive(cases...) }),
			actor.On(func(Ping) {}), // stops
		}
		c.Receive(cases...)
	})
	return ref, lost
}

// Two partitions each claim a mesh-wide name, then heal: every peer
// resolves the same single holder, the loser's actor is told, a new claim
// of a held name fails with ErrNameTaken, and the name is free again once
// its holder stops.
func TestGlobalNameConflictAndHeal(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("global"), peer.WithGroups(true), peer.WithAdvertisements(50*time.Millisecond, 5*time.Second)}
	a1, a2, b1, b2 := newNode(t, opts...), newNode(t, opts...), newNode(t, opts...), newNode(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a2.Connect(ctx, *a1.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if err := b2.Connect(ctx, *b1.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	la, lostA := holder(t, a1, "la")
	lb, lostB := holder(t, b1, "lb")
	if err := a1.ClaimGlobal(ctx, "leader", la); err != nil {
		t.Fatal(err)
	}
	if err := b1.ClaimGlobal(ctx, "leader", lb); err != nil {
		t.Fatal(err)
	}
	holds := func(want actor.Ref, nodes ...*peer.Node) func() bool {
		return func() bool {
			for _, n := range nodes {
				if got, ok := n.WhereisGlobal("leader"); !ok || got != want {
					return false
				}
			}
			return true
		}
	}
	testutil.Eventually(t, 10*time.Second, "each side sees its own claim", func() bool { return holds(la, a1, a2)() && holds(lb, b1, b2)() })

	// Heal.
	if err := a2.Connect(ctx, *b2.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	var winner, loser actor.Ref
	var lost <-chan peer.GlobalNameLost
	testutil.Eventually(t, 15*time.Second, "one holder on every peer", func() bool {
		w, ok := a1.WhereisGlobal("leader")
		if !ok || (w != la && w != lb) {
			return false
		}
		winner = w
		return holds(w, a1, a2, b1, b2)()
	})
	if winner == la {
		loser, lost = lb, lostB
	} else {
		loser, lost = la, lostA
	}
	select {
	case m := <-lost:
		if m.Name != "leader" || m.Winner != winner {
			t.Fatalf("loser %v told %+v, want the winner %v", loser, m, winner)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("loser %v not told", loser)
	}
	select {
	case m := <-map[actor.Ref]<-chan peer.GlobalNameLost{la: lostA, lb: lostB}[winner]:
		t.Fatalf("the winner was told it lost: %+v", m)
	default:
	}

	// A claim of a name known held fails at once, whoever is nearer; so
	// does one for another peer's actor.
	for _, n := range []*peer.Node{a1, a2, b1, b2} {
		other, _ := holder(t, n, "other")
		if err := n.ClaimGlobal(ctx, "leader", other); !errors.Is(err, peer.ErrNameTaken) {
			t.Fatalf("claim of a held name: %v, want ErrNameTaken", err)
		}
	}
	if err := a2.ClaimGlobal(ctx, "mine", lb); !errors.Is(err, peer.ErrNotLocal) {
		t.Fatalf("claim for another peer's actor: %v, want ErrNotLocal", err)
	}

	// The holder stops: the name is free on every peer.
	for _, n := range []*peer.Node{a1, b1} {
		if ref, ok := n.System().Whereis(winner.Name()); ok && ref == winner {
			n.System().Send(winner, Ping{})
		}
	}
	testutil.Eventually(t, 15*time.Second, "the name freed", func() bool {
		for _, n := range []*peer.Node{a1, a2, b1, b2} {
			if _, ok := n.WhereisGlobal("leader"); ok {
				return false
			}
		}
		return true
	})
}
