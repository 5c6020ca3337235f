package groups

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
	"github.com/troupe-mesh/troupe/routing"
)

// The group members of a peer that restarted (a new incarnation, found
// before any disconnection: routing.EvtPeerRestarted, which the router
// emits, TestNewIncarnationFiresMonitors in routing) leave their groups,
// as those of a peer that disconnected do: the former incarnation's
// actors are gone.
func TestRestartedPeersMembersLeave(t *testing.T) {
	hA, sysA := testPeer(t, config{Logger: slog.New(slog.DiscardHandler)})
	hB, sysB := testPeer(t, config{Logger: slog.New(slog.DiscardHandler)})
	restarted, err := hA.EventBus().Emitter(new(routing.EvtPeerRestarted))
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
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
	if err := restarted.Emit(routing.EvtPeerRestarted{Peer: hB.ID()}); err != nil {
		t.Fatal(err)
	}
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
	hA, sysA := testPeer(t, base)
	hB, sysB := testPeer(t, base)
	hC, sysC := testPeer(t, base)
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
