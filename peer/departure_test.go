package peer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/routing"
)

// TestDisconnectionInALargeMesh: in a mesh no larger than the connection
// budget's high mark a disconnection is a departure, and the peer's
// advertisement goes at once; in a larger one (here, a
// node whose high mark is 1) it is most likely a trim, and they stay.
func TestDisconnectionInALargeMesh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	small := newTestNode(t, WithGroups(true))                                                // a mesh of 2 <= 32
	large := newTestNode(t, WithGroups(true), WithConnections(Connections{Low: 1, High: 1})) // 2 > 1
	spoke := newTestNode(t, WithGroups(true))
	// A member of "room" on each: a node hears of the members of the
	// groups it has members in.
	for _, n := range []*Node{small, large, spoke} {
		joined := make(chan error, 1)
		name := "member"
		if n == spoke {
			name = "svc"
		}
		if _, err := n.System().Spawn(name, func(c *actor.Context) {
			joined <- group.Join(c, "room")
			c.Receive(actor.Loop(actor.Any(func(any) {})))
		}); err != nil {
			t.Fatal(err)
		}
		if err := <-joined; err != nil {
			t.Fatal(err)
		}
	}
	// members counts the spoke's members of "room" that n knows of (the
	// others' come to each through the spoke).
	members := func(n *Node) int {
		k := 0
		for _, m := range n.port.RemoteMembers()["room"] {
			if m.Peer() == spoke.ID().String() {
				k++
			}
		}
		return k
	}
	for _, n := range []*Node{small, large} {
		if err := n.Connect(ctx, *spoke.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Directory().Await(ctx, "svc"); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, "the spoke's member arrived", func() bool { return members(n) == 1 })
	}
	for _, n := range []*Node{small, large} {
		if err := n.Host().Network().ClosePeer(spoke.ID()); err != nil {
			t.Fatal(err)
		}
	}
	// The small mesh's node drops them at once; the large mesh's node,
	// which took the same event, keeps them.
	// (Only its directory is waited for: a presence message in flight as
	// the connection closed may bring the member back, to expire later.)
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		if ads := small.Directory().Lookup("svc"); len(ads) > 0 {
			return fmt.Errorf("a departed peer's advertisement stayed in a small mesh: %v", ads)
		}
		return nil
	})
	// A negative check: the large mesh's node keeps them for a while;
	// nothing would announce a drop, so it is looked for every 50 ms.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if len(large.Directory().Lookup("svc")) == 0 || members(large) != 1 {
			t.Fatal("a disconnection in a large mesh dropped the peer's advertisement or member")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAskALeftPeerInALargeMesh: in a large mesh the advertisement of a
// peer that really left stays (until its TTL), so Whereis still names
// it; an Ask to it then fails, well before its own deadline, with
// routing.ErrUnreachable (the dial finds nobody), or actor.ErrNodeDown
// when the router hears of the disconnection after the Ask began.
func TestAskALeftPeerInALargeMesh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	large := newTestNode(t, WithGroups(true), WithConnections(Connections{Low: 1, High: 1}))
	spoke, err := New(ctx, quiet(), local(), WithGroups(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spoke.Close(context.Background()) }) // closed below too
	if _, err := spoke.System().Spawn("svc", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(any) {})))
	}); err != nil {
		t.Fatal(err)
	}
	if err := large.Connect(ctx, *spoke.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if _, err := large.Directory().Await(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if err := spoke.Close(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the closed spoke disconnected", func() bool {
		return large.Host().Network().Connectedness(spoke.ID()) != network.Connected
	})
	ref, err := large.Whereis(ctx, "svc")
	if err != nil || ref.Peer() != spoke.ID().String() {
		t.Fatalf("Whereis of the left peer's actor: %v, %v; want its ref while the advertisement lasts", ref, err)
	}
	askCtx, askCancel := context.WithTimeout(ctx, 20*time.Second)
	defer askCancel()
	began := time.Now()
	_, err = large.System().Ask(askCtx, ref, "ping")
	if !errors.Is(err, routing.ErrUnreachable) && !errors.Is(err, actor.ErrNodeDown) {
		t.Fatalf("Ask of a left peer's actor: %v, want routing.ErrUnreachable or actor.ErrNodeDown", err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Fatalf("the Ask took %v to fail", took)
	}
}
