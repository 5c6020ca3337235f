package peer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// TestRemoteSpawnsAreChargedAndNamed: names a remote spawn may take begin
// with the configured prefix (a local Spawn keeps the others); the
// node-wide total caps what several peers spawn, each within its quota.
func TestRemoteSpawnsAreChargedAndNamed(t *testing.T) {
	host := newTestNode(t, WithRemoteSpawnQuota(3), WithRemoteSpawnTotal(4))
	if err := host.RegisterBehavior("stopper", stopper); err != nil {
		t.Fatal(err)
	}
	a, b, c := newTestNode(t), newTestNode(t), newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, n := range []*Node{a, b, c} {
		if err := n.Connect(ctx, *host.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.SpawnRemote(ctx, host.ID(), "stopper", "payments", "x"); !errors.Is(err, ErrSpawnRefused) {
		t.Fatalf("a remote spawn of %q: %v, want ErrSpawnRefused", "payments", err)
	}
	if _, err := a.SpawnRemote(ctx, host.ID(), "stopper", "bad/name", "x"); !errors.Is(err, actor.ErrInvalidName) {
		t.Fatalf("an invalid name: %v, want ErrInvalidName", err)
	}
	if _, err := host.System().Spawn("payments", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }); err != nil {
		t.Fatalf("the local spawn of payments: %v", err)
	}
	if ref, err := a.SpawnRemote(ctx, host.ID(), "stopper", "remote.a1", "x"); err != nil || ref.Name() != "remote.a1" {
		t.Fatalf("a remote spawn with the prefix: %v %v", ref, err)
	}
	for _, n := range []*Node{a, b, c} {
		if _, err := n.SpawnRemote(ctx, host.ID(), "stopper", "", "x"); err != nil {
			t.Fatalf("a generated name: %v", err)
		}
	}
	if _, err := c.SpawnRemote(ctx, host.ID(), "stopper", "", "x"); !errors.Is(err, actor.ErrSystemLimit) {
		t.Fatalf("beyond the total, c within its quota: %v, want ErrSystemLimit", err)
	}
	if _, err := New(ctx, WithRemoteSpawnTotal(-1)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("a negative total: %v, want ErrInvalidOption", err)
	}
}

// TestRemoteSpawnsStopWithTheirSpawner: when the peer that spawned them
// disconnects, its actors stop with ErrSpawnerGone, except those of a
// behavior that OutlivesSpawner; its quota is freed. Another peer's
// actors live on.
func TestRemoteSpawnsStopWithTheirSpawner(t *testing.T) {
	host := newTestNode(t)
	if err := host.RegisterBehavior("stopper", stopper); err != nil {
		t.Fatal(err)
	}
	if err := host.RegisterBehavior("keeper", stopper, OutlivesSpawner()); err != nil {
		t.Fatal(err)
	}
	a, b := newTestNode(t), newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, n := range []*Node{a, b} {
		if err := n.Connect(ctx, *host.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	spawn := func(n *Node, behavior string) actor.Ref {
		t.Helper()
		ref, err := n.SpawnRemote(ctx, host.ID(), behavior, "", "x")
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	a1, a2, kept, b1 := spawn(a, "stopper"), spawn(a, "stopper"), spawn(a, "keeper"), spawn(b, "stopper")
	downs := make(chan actor.Down, 8)
	ready := make(chan struct{})
	if _, err := host.System().Spawn("watcher", func(c *actor.Context) {
		for _, r := range []actor.Ref{a1, a2, kept, b1} {
			c.Monitor(r)
		}
		close(ready)
		c.Receive(actor.Loop(actor.On(func(d actor.Down) { downs <- d })))
	}); err != nil {
		t.Fatal(err)
	}
	<-ready
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := map[actor.Ref]bool{}
	for range 2 {
		select {
		case d := <-downs:
			if !errors.Is(d.Reason, ErrSpawnerGone) || (d.Ref != a1 && d.Ref != a2) {
				t.Fatalf("Down %+v, want one of a's stoppers with ErrSpawnerGone", d)
			}
			stopped[d.Ref] = true
		case <-ctx.Done():
			t.Fatalf("a's actors did not stop when a was gone (stopped: %v)", stopped)
		}
	}
	for _, name := range []string{kept.Name(), b1.Name()} {
		if _, ok := host.System().Whereis(name); !ok {
			t.Fatalf("%s stopped with a", name)
		}
	}
	select {
	case d := <-downs:
		t.Fatalf("another actor stopped: %+v", d)
	default:
	}
}

// TestFailedRemoteSpawnLeavesNoGuard: a remote spawn that fails after
// its peer's guard was made (the name is taken) leaves no guard behind.
func TestFailedRemoteSpawnLeavesNoGuard(t *testing.T) {
	host := newTestNode(t)
	if err := host.RegisterBehavior("stopper", stopper); err != nil {
		t.Fatal(err)
	}
	a := newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Connect(ctx, *host.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if _, err := host.System().Spawn("remote.taken", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }); err != nil {
		t.Fatal(err)
	}
	before := host.System().Actors()
	for range 3 {
		if _, err := a.SpawnRemote(ctx, host.ID(), "stopper", "remote.taken", "x"); !errors.Is(err, actor.ErrNameTaken) {
			t.Fatalf("a remote spawn of a taken name: %v, want ErrNameTaken", err)
		}
	}
	testutil.EventuallyNil(t, 5*time.Second, func() error { // a guard's stop has no event to await
		if n := host.System().Actors(); n != before {
			return fmt.Errorf("%d actors after the failed spawns, want %d: a guard was left", n, before)
		}
		return nil
	})
}
