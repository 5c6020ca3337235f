package groups

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
	"github.com/troupe-mesh/troupe/routing"
)

// Test fixtures: peers with a Router and a Groups on one actor system, as
// peer.Node assembles them, and actors that join a group.

// testPeer starts a host on 127.0.0.1 with an actor system whose
// transport is a routing.Router (through routing's exported New) and
// whose group transport is a Groups of the config base (its host,
// registry and port are filled in; mesh "test" unless it names one), all
// closed when the test ends.
func testPeer(t *testing.T, base config) (host.Host, *actor.System) {
	t.Helper()
	h := testhost.NewHost(t)
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if base.Mesh == "" {
		base.Mesh = "test"
	}
	var (
		r *routing.Router
		g *Groups
	)
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		var err error
		if r, err = routing.New(h, reg, p, routing.WithLogger(base.Logger)); err != nil {
			return nil, nil, err
		}
		base.Host, base.Registry, base.Port = h, reg, p
		if g, err = newGroups(base); err != nil {
			return nil, nil, err // r is closed once NewSystem returned (transport.Factory)
		}
		return r, g, nil
	}, actor.WithPeer(h.ID().String()), actor.WithLogger(base.Logger))
	if err != nil {
		if r != nil {
			_ = r.Close(context.Background())
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
		_ = g.Close(ctx)
		_ = r.Close(ctx) // then NewHost's cleanup closes h
	})
	return h, sys
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

// drain empties ch of what it holds now.
func drain(ch <-chan any) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
