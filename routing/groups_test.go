package routing

import (
	"context"
	"log/slog"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
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
	news := make(chan any, 16)
	if _, err := sysA.Spawn("watch", func(c *actor.Context) {
		if err := c.Join("room", actor.WatchPresence()); err != nil {
			t.Error(err)
		}
		var h actor.Case
		h = actor.Any(func(m any) { news <- m; c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := sysB.Spawn("m", func(c *actor.Context) {
		if err := c.Join("room"); err != nil {
			t.Error(err)
		}
		c.Receive(actor.On(func(string) {}))
	}); err != nil {
		t.Fatal(err)
	}
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
	for next() != (actor.Joined{Group: "room", Member: m}) {
	}
	rA.hello(hB.ID(), 11, nil) // B's incarnation, as a stream's hello gives it
	rA.hello(hB.ID(), 12, nil) // B restarted
	if n := next(); n != (actor.Left{Group: "room", Member: m}) {
		t.Fatalf("after B restarted: %#v, want B/m to leave", n)
	}
}
