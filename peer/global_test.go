package peer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
)

// stopMsg makes an idle actor (see idleActor) stop.
type stopMsg struct{}

// idleActor waits for stopMsg and stops.
func idleActor(c *actor.Context) { c.Receive(actor.On(func(stopMsg) {})) }

// stopAndWait stops ref, an idleActor, and waits until it is gone.
func stopAndWait(t *testing.T, n *Node, ref actor.Ref) {
	t.Helper()
	down := make(chan struct{})
	if _, err := n.System().Spawn("", func(c *actor.Context) {
		c.Monitor(ref)
		c.Receive(actor.On(func(actor.Down) { close(down) }))
	}); err != nil {
		t.Fatal(err)
	}
	n.System().Send(ref, stopMsg{})
	select {
	case <-down:
	case <-time.After(5 * time.Second):
		t.Fatalf("%v did not stop", ref)
	}
}

// ClaimGlobal's local rules: no claim without a directory, for an actor
// of another peer or one not alive, beyond MaxAdGlobal names, or of a
// name the node holds for another actor; a claim repeated is no error;
// the name of a holder that stopped is free at once, before the next
// advertisement prunes the claim.
func TestClaimGlobalLocalRules(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := newTestNode(t).ClaimGlobal(ctx, "x", actor.Ref{}); !errors.Is(err, ErrNoDirectory) {
		t.Fatalf("without a directory: %v, want ErrNoDirectory", err)
	}
	// Advertisements a minute apart: nothing but ClaimGlobal itself
	// prunes a stopped holder's claim within the test.
	n := newTestNode(t, WithGroups(true), WithAdvertisements(time.Minute, 5*time.Minute))
	a, err := n.System().Spawn("a", idleActor)
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.System().Spawn("b", idleActor)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Ref(newTestNode(t).ID(), "a")
	if err := n.ClaimGlobal(ctx, "x", other); !errors.Is(err, ErrNotLocal) {
		t.Fatalf("another peer's actor: %v, want ErrNotLocal", err)
	}
	ghost, _ := Ref(n.ID(), "ghost")
	if err := n.ClaimGlobal(ctx, "x", ghost); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("no such actor: %v, want ErrNoSuchActor", err)
	}
	if err := n.ClaimGlobal(ctx, "x", a); err != nil {
		t.Fatal(err)
	}
	if err := n.ClaimGlobal(ctx, "x", a); err != nil {
		t.Fatalf("the same claim again: %v", err)
	}
	if err := n.ClaimGlobal(ctx, "x", b); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("a name held here: %v, want ErrNameTaken", err)
	}
	if got, ok := n.WhereisGlobal("x"); !ok || got != a {
		t.Fatalf("WhereisGlobal(x) = %v, %v; want %v", got, ok, a)
	}
	for i := 1; i < discovery.MaxAdGlobal; i++ {
		if err := n.ClaimGlobal(ctx, fmt.Sprint("n", i), a); err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	if err := n.ClaimGlobal(ctx, "one-more", a); !errors.Is(err, ErrTooManyClaims) {
		t.Fatalf("claim %d: %v, want ErrTooManyClaims", discovery.MaxAdGlobal+1, err)
	}

	stopAndWait(t, n, a)
	if _, ok := n.WhereisGlobal("x"); ok {
		t.Fatal("a stopped holder still holds x")
	}
	if err := n.ClaimGlobal(ctx, "x", b); err != nil {
		t.Fatalf("x after its holder stopped: %v", err)
	}
	if got, ok := n.WhereisGlobal("x"); !ok || got != b {
		t.Fatalf("WhereisGlobal(x) = %v, %v; want %v", got, ok, b)
	}
}
