package routing

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
)

// The group members of a peer that restarted (a new incarnation, found
// before any disconnection) leave their groups, as those of a peer that
// disconnected do: the former incarnation's actors are gone.
func TestRestartedPeersMembersLeave(t *testing.T) {
	hA, rA, sysA := testPeer(t, 0, slog.New(slog.DiscardHandler), true)
	hB, _, sysB := testPeer(t, 0, slog.New(slog.DiscardHandler), true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := hA.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	news := watchRoom(t, sysA)
	joinRoom(t, sysB)
	m, _ := actor.NewRef(hB.ID().String(), "m")
	next := func() any {
		t.Helper()
		select {
		case n := <-news:
			return n
		case <-ctx.Done():
			t.Fatal("no presence news")
			return nil
		}
	}
	for next() != (group.Joined{Group: "room", Member: m}) {
	}
	rA.hello(hB.ID(), 11, nil) // B's incarnation, as a stream's hello gives it
	rA.hello(hB.ID(), 12, nil) // B restarted
	if n := next(); n != (group.Left{Group: "room", Member: m}) {
		t.Fatalf("after B restarted: %#v, want B/m to leave", n)
	}
}

// A member on a peer this node is not connected to (heard of through a
// peer in between, as GossipSub relays) stays while its peer renews its
// presence, and leaves when its peer goes: nothing is heard of it for
// presenceExpiry, and no disconnection would tell.
func TestMembersOutOfReachExpire(t *testing.T) {
	const presenceRenew = 200 * time.Millisecond
	base := config{Logger: slog.New(slog.DiscardHandler), timings: timings{presenceRenew: presenceRenew}}
	hA, _, sysA := testPeerTuned(t, base, nil, true)
	hB, _, sysB := testPeerTuned(t, base, nil, true)
	hC, _, sysC := testPeerTuned(t, base, nil, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A - B - C: A and C know of each other only through B.
	for _, h := range []host.Host{hA, hC} {
		if err := h.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	news := watchRoom(t, sysA)
	joinRoom(t, sysB)
	joinRoom(t, sysC)
	far, _ := actor.NewRef(hC.ID().String(), "m")
	for joined := false; !joined; {
		select {
		case n := <-news:
			joined = n == group.Joined{Group: "room", Member: far}
		case <-ctx.Done():
			t.Fatal("C's member never joined at A")
		}
	}
	// While C lives, its renewals keep its member at A.
	window := time.After(3 * (3*presenceRenew + presenceRenew/2))
	for open := true; open; {
		select {
		case n := <-news:
			if l, ok := n.(group.Left); ok {
				t.Fatalf("%v left while its peer lives", l.Member)
			}
		case <-window:
			open = false
		}
	}
	if hA.Network().Connectedness(hC.ID()) == network.Connected {
		t.Fatal("A connected to C directly: the test needs C out of A's reach")
	}
	start := time.Now()
	_ = hC.Close()
	for {
		select {
		case n := <-news:
			if n == (group.Left{Group: "room", Member: far}) {
				t.Logf("C's member left at A %v after C closed", time.Since(start).Round(time.Millisecond))
				return
			}
		case <-ctx.Done():
			t.Fatal("C's member never left at A after C closed")
		}
	}
}

// watchRoom spawns an actor "watch" on sys that joins the group "room",
// watching presence, and passes on everything it gets.
func watchRoom(t *testing.T, sys *actor.System) <-chan any {
	t.Helper()
	news := make(chan any, 64)
	if _, err := sys.Spawn("watch", func(c *actor.Context) {
		if err := group.Join(c, "room", group.WatchPresence()); err != nil {
			t.Error(err)
		}
		var h actor.Case
		h = actor.Any(func(m any) { news <- m; c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	return news
}

// joinRoom spawns an actor "m" on sys that joins the group "room" and
// waits.
func joinRoom(t *testing.T, sys *actor.System) {
	t.Helper()
	if _, err := sys.Spawn("m", func(c *actor.Context) {
		if err := group.Join(c, "room"); err != nil {
			t.Error(err)
		}
		c.Receive(actor.On(func(string) {}))
	}); err != nil {
		t.Fatal(err)
	}
}
