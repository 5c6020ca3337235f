package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/peer"
)

// Peers advertise their public actors; the directory finds them, rejects
// forged and malformed advertisements, and forgets a peer that leaves or
// whose advertisement expires.
func TestAdvertisementsAndDirectory(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("adtest"), peer.WithGroups(true), peer.WithAdvertisements(50*time.Millisecond, 3*time.Second)}
	a, b, c := newNode(t, opts...), newNode(t, opts...), newNode(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []*peer.Node{b, c} {
		if err := n.Connect(ctx, *a.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	spawn(t, b, "alpha", echo)
	waitFor(t, func() bool { return len(a.Directory().Lookup("alpha")) == 1 })
	want, _ := peer.Ref(b.ID(), "alpha")
	if got := a.Directory().Lookup("alpha"); got[0] != want {
		t.Fatalf("directory: %v, want %v", got, want)
	}
	if ref, err := a.Whereis(ctx, "alpha"); err != nil || ref != want {
		t.Fatalf("whereis: %v %v", ref, err)
	}
	if _, err := a.Whereis(ctx, "nobody"); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("whereis nobody: %v", err)
	}

	// A raw peer publishes a forged advertisement (describing c, signed with
	// its own key), garbage, and then a valid one of its own with a 1 s TTL.
	raw, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	psCtx, stopPS := context.WithCancel(ctx)
	defer stopPS()
	ps, err := pubsub.NewGossipSub(psCtx, raw)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join("/troupe/adtest/ads")
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if err := raw.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return slices.Contains(ps.ListPeers("/troupe/adtest/ads"), a.ID()) })
	before := a.DirectoryRejected()
	forged, err := discovery.Sign(raw, &discovery.Advertisement{Peer: []byte(c.ID()), Actors: []string{"fake"}, TTLSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{forged, []byte("garbage")} {
		if err := topic.Publish(ctx, data); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return a.DirectoryRejected() >= before+2 })
	if refs := a.Directory().Lookup("fake"); len(refs) != 0 {
		t.Fatalf("forged advertisement accepted: %v", refs)
	}
	own, err := discovery.Sign(raw, &discovery.Advertisement{Peer: []byte(raw.ID()), Actors: []string{"short-lived"}, TTLSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := topic.Publish(ctx, own); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.Directory().Lookup("short-lived")) == 1 })
	waitFor(t, func() bool { return len(a.Directory().Lookup("short-lived")) == 0 }) // TTL lapsed

	// b leaves: its advertisement goes with it.
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.Directory().Lookup("alpha")) == 0 })
}
