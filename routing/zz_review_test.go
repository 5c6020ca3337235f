package routing

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

func zzGroupPeer(t *testing.T) (host.Host, *Router, *actor.System) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := codec.NewRegistry()
	r, err := New(Config{Host: h, Registry: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGroups(GroupsConfig{Host: h, Registry: reg, Mesh: "zz", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	sys, err := actor.New(actor.WithPeer(h.ID().String()), actor.WithRemote(r), actor.WithGroups(g), actor.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	g.Bind(sys)
	if err := r.Bind(sys); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
		g.Close()
		_ = r.Close(ctx)
		_ = h.Close()
	})
	return h, r, sys
}

// A peer found to be a new incarnation (no disconnection seen) fires
// monitors (PeerDown), but its group members of the former incarnation
// stay members for ever: no Left.
func TestZZGroupMembersOfRestartedPeer(t *testing.T) {
	hA, rA, sysA := zzGroupPeer(t)
	hB, _, sysB := zzGroupPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
		_ = c.Join("room")
		c.Receive(actor.On(func(string) {}))
	}); err != nil {
		t.Fatal(err)
	}
	m, _ := actor.NewRef(hB.ID().String(), "m")
	for deadline := time.After(20 * time.Second); ; {
		select {
		case n := <-news:
			if j, ok := n.(actor.Joined); ok && j.Member == m {
				goto joined
			}
		case <-deadline:
			t.Fatal("B/m never joined")
		}
	}
joined:
	// B restarted (a new incarnation), found before any disconnection.
	rA.mu.Lock()
	inc := rA.remote[hB.ID()]
	rA.mu.Unlock()
	rA.hello(hB.ID(), inc+2, nil)
	select {
	case n := <-news:
		t.Logf("after the restart: %#v", n)
	case <-time.After(3 * time.Second):
		t.Errorf("B/m of B's former incarnation never left room (A's PeersDown=%d)", rA.Stats().PeersDown)
	}
}
