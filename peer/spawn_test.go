package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// stopper is a behavior for remote spawns: it stops on any message.
func stopper(any) (actor.Behavior, error) {
	return func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }, nil
}

// TestSpawnPolicyAndQuota: host lets peers spawn at most 2 live actors
// each, and its policy refuses peer refused altogether (the policy sees
// who asks). Beyond the quota a spawn fails with actor.ErrSystemLimit
// while another peer still may; once one of its actors stopped, the peer
// may spawn again; a spawn on the node itself is not limited.
func TestSpawnPolicyAndQuota(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []libp2ppeer.ID
	)
	refused := newTestNode(t)
	host := newTestNode(t, WithRemoteSpawnQuota(2), WithSpawnPolicy(func(from libp2ppeer.ID, behavior string) error {
		mu.Lock()
		seen = append(seen, from)
		mu.Unlock()
		if from == refused.ID() {
			return fmt.Errorf("not %s", behavior)
		}
		return nil
	}))
	a, b := newTestNode(t), newTestNode(t)
	if err := host.RegisterBehavior("stopper", stopper); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range []*Node{refused, a, b} {
		if err := n.Connect(ctx, *host.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := refused.SpawnRemote(ctx, host.ID(), "stopper", "", "x"); !errors.Is(err, ErrSpawnRefused) {
		t.Fatalf("spawn from a refused peer: %v, want ErrSpawnRefused", err)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != refused.ID() {
		t.Fatalf("the policy saw %v, want %v", seen, refused.ID())
	}
	mu.Unlock()
	var first actor.Ref
	for i := range 2 {
		ref, err := a.SpawnRemote(ctx, host.ID(), "stopper", "", "x")
		if err != nil {
			t.Fatalf("spawn %d from a: %v", i, err)
		}
		first = ref
	}
	if _, err := a.SpawnRemote(ctx, host.ID(), "stopper", "", "x"); !errors.Is(err, actor.ErrSystemLimit) {
		t.Fatalf("third spawn from a: %v, want ErrSystemLimit", err)
	}
	if _, err := b.SpawnRemote(ctx, host.ID(), "stopper", "", "x"); err != nil {
		t.Fatalf("spawn from b while a is at its quota: %v", err)
	}
	for range 3 {
		if _, err := host.SpawnRemote(ctx, host.ID(), "stopper", "", "x"); err != nil {
			t.Fatalf("local spawn: %v", err)
		}
	}
	// One of a's actors stops: room for one more, once the node actor
	// saw its Down (no event tells a of that: retry within a bound).
	a.System().Send(first, "stop")
	testutil.EventuallyNil(t, 10*time.Second, func() error {
		_, err := a.SpawnRemote(ctx, host.ID(), "stopper", "", "x")
		if err != nil && !errors.Is(err, actor.ErrSystemLimit) {
			t.Fatalf("spawn after one of a's actors stopped: %v", err)
		}
		if err != nil {
			return fmt.Errorf("spawn after one of a's actors stopped: %w", err)
		}
		return nil
	})
	if _, err := a.SpawnRemote(ctx, host.ID(), "stopper", "", "x"); !errors.Is(err, actor.ErrSystemLimit) {
		t.Fatalf("spawn beyond the quota again: %v, want ErrSystemLimit", err)
	}
	if _, err := New(ctx, WithRemoteSpawnQuota(-1)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("a negative quota: %v, want ErrInvalidOption", err)
	}
}
