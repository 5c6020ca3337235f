package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
	"github.com/troupe-mesh/troupe/routing/groups"
)

// A group spans five peers: a broadcast reaches every member on every peer
// exactly once, members that left get nothing more, and oversize messages
// are refused at the sender.
func TestGroupBroadcastAcrossFivePeers(t *testing.T) {
	const peers = 5
	nodes := make([]*peer.Node, peers)
	for i := range nodes {
		nodes[i] = newNode(t, peer.WithMesh("grouptest"), peer.WithGroups(true))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i < peers; i++ { // a chain: GossipSub forwards along it
		if err := nodes[i].Connect(ctx, *nodes[i-1].AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	type delivery struct {
		member string
		msg    Ping
	}
	got := make(chan delivery, 100)
	joined := make(chan struct{}, 2*peers)
	leave := make(map[string]actor.Ref)
	for i, n := range nodes {
		for j := range 2 { // two members per peer
			name := fmt.Sprintf("m%d-%d", i, j)
			ref := spawn(t, n, name, func(c *actor.Context) {
				if err := group.Join(c, "room"); err != nil {
					t.Error(err)
				}
				joined <- struct{}{}
				var h actor.Case
				h = actor.Any(func(m any) {
					switch m := m.(type) {
					case Ping:
						got <- delivery{name, m}
					case Crash: // leave the group, keep living
						group.Leave(c, "room")
						got <- delivery{name + " left", Ping{}}
					}
					c.Receive(h)
				})
				c.Receive(h)
			})
			if j == 1 {
				leave[name] = ref
			}
		}
	}
	for range 2 * peers {
		recv(t, joined)
	}
	for i, n := range nodes { // a chain: ends have one topic peer, the rest two
		want := 2
		if i == 0 || i == peers-1 {
			want = 1
		}
		if err := n.GroupReady(ctx, "room", want); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes[2].Publish("room", Ping{1}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 2 * peers {
		var d delivery
		select {
		case d = <-got:
		case <-time.After(10 * time.Second):
			var st []groups.Stats
			for _, n := range nodes {
				st = append(st, n.Groups().Stats())
			}
			t.Fatalf("first broadcast reached only %v; stats %+v", seen, st)
		}
		if d.msg != (Ping{1}) {
			t.Fatalf("delivery %+v", d)
		}
		seen[d.member]++
	}
	for name, k := range seen {
		if k != 1 {
			t.Fatalf("%s got the message %d times", name, k)
		}
	}
	if len(seen) != 2*peers {
		t.Fatalf("%d members reached, want %d", len(seen), 2*peers)
	}
	// The second member of each peer leaves; a broadcast from an actor
	// reaches only the first ones.
	for name, ref := range leave {
		var i, j int
		fmt.Sscanf(name, "m%d-%d", &i, &j)
		nodes[i].System().Send(ref, Crash{})
		if d := recv(t, got); d.member != name+" left" {
			t.Fatalf("got %+v waiting for %s to leave", d, name)
		}
	}
	spawn(t, nodes[4], "speaker", func(c *actor.Context) {
		if err := group.Broadcast(c, "room", Ping{2}); err != nil {
			t.Error(err)
		}
	})
	seen = map[string]int{}
	for range peers {
		d := recv(t, got)
		if d.msg != (Ping{2}) {
			t.Fatalf("delivery %+v", d)
		}
		seen[d.member]++
	}
	for i := range peers {
		if seen[fmt.Sprintf("m%d-0", i)] != 1 {
			t.Fatalf("second broadcast reached %v", seen)
		}
	}
	if err := nodes[0].Publish("room", Blob{Data: make([]byte, 900<<10)}); err != nil {
		t.Fatalf("a 900 KiB group message was refused: %v", err)
	}
	big := Blob{Data: make([]byte, 1<<20)}
	if err := nodes[0].Publish("room", big); !errors.Is(err, routing.ErrTooLarge) {
		t.Fatalf("oversize group message: %v, want ErrTooLarge", err)
	}
}

// Members watching presence learn who is in the group on every peer: who
// joins, who leaves, and who goes away with a closed peer.
func TestGroupPresenceAcrossPeers(t *testing.T) {
	nodes := []*peer.Node{newNode(t, peer.WithMesh("presence"), peer.WithGroups(true)), newNode(t, peer.WithMesh("presence"), peer.WithGroups(true)), newNode(t, peer.WithMesh("presence"), peer.WithGroups(true))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range nodes {
		for j := range i {
			if err := nodes[i].Connect(ctx, *nodes[j].AddrInfo()); err != nil {
				t.Fatal(err)
			}
		}
	}
	type event struct {
		at   string
		what string // "joined x" or "left x"
	}
	events := make(chan event, 100)
	member := func(n *peer.Node, name string) actor.Ref {
		return spawn(t, n, name, func(c *actor.Context) {
			if err := group.Join(c, "lobby", group.WatchPresence()); err != nil {
				t.Error(err)
			}
			var h actor.Case
			h = actor.Any(func(m any) {
				switch m := m.(type) {
				case group.Joined:
					events <- event{name, "joined " + m.Member.Name()}
				case group.Left:
					events <- event{name, "left " + m.Member.Name()}
				case Crash:
					group.Leave(c, "lobby")
				}
				c.Receive(h)
			})
			c.Receive(h)
		})
	}
	expect := func(want ...event) {
		t.Helper()
		left := map[event]bool{}
		for _, w := range want {
			left[w] = true
		}
		deadline := time.After(15 * time.Second)
		for len(left) > 0 {
			select {
			case e := <-events:
				if !left[e] {
					t.Fatalf("unexpected presence event %+v (waiting for %v)", e, left)
				}
				delete(left, e)
			case <-deadline:
				t.Fatalf("missing presence events %v", left)
			}
		}
	}
	a1 := member(nodes[0], "a1")
	member(nodes[1], "b1")
	expect(event{"a1", "joined b1"}, event{"b1", "joined a1"})
	member(nodes[2], "c1")
	expect(event{"a1", "joined c1"}, event{"b1", "joined c1"}, event{"c1", "joined a1"}, event{"c1", "joined b1"})
	nodes[0].System().Send(a1, Crash{}) // a1 leaves
	expect(event{"b1", "left a1"}, event{"c1", "left a1"})
	if err := nodes[2].Close(ctx); err != nil { // c1 goes away with its peer
		t.Fatal(err)
	}
	expect(event{"b1", "left c1"})
}

// A malformed message on a group's topic is rejected by the validator,
// counted, and reaches no member.
func TestGroupRejectsMalformedMessages(t *testing.T) {
	a := newNode(t, peer.WithMesh("badinput"), peer.WithGroups(true))
	got := make(chan any, 10)
	joined := make(chan struct{})
	spawn(t, a, "member", func(c *actor.Context) {
		if err := group.Join(c, "room"); err != nil {
			t.Error(err)
		}
		close(joined)
		var h actor.Case
		h = actor.Any(func(m any) { got <- m; c.Receive(h) })
		c.Receive(h)
	})
	recv(t, joined)
	rawHost := testhost.NewHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	psCtx, stopPS := context.WithCancel(ctx)
	defer stopPS()
	ps, err := pubsub.NewGossipSub(psCtx, rawHost)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join("/troupe/badinput/group/room")
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if err := rawHost.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	// The raw peer publishes without subscribing: it needs to know a as a
	// subscriber of the topic.
	waitFor(t, func() bool { return len(ps.ListPeers("/troupe/badinput/group/room")) > 0 })
	for _, junk := range [][]byte{[]byte("not cbor"), {0x86, 0x01}} {
		if err := topic.Publish(ctx, junk); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return a.Groups().Stats().Rejected >= 2 })
	if err := a.Publish("room", "marker"); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got); m != "marker" {
		t.Fatalf("member got %v before the marker", m)
	}
}
