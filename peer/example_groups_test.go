package peer_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/peer"
)

// groupNode starts a node on loopback with groups and advertisements on.
func groupNode(ctx context.Context) *peer.Node {
	n, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"), peer.WithGroups(true))
	if err != nil {
		log.Fatal(err)
	}
	return n
}

// Groups across peers: a member on each peer joins "room", and one
// Broadcast reaches both, once each. With WithGroups each group is a
// GossipSub topic of the mesh; GroupReady waits for the topic's mesh to
// form, as GossipSub drops what is published before.
func Example_groups() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := groupNode(ctx), groupNode(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		log.Fatal(err)
	}

	got := make(chan string, 2)
	for name, n := range map[string]*peer.Node{"ann": a, "bob": b} {
		joined := make(chan error)
		n.System().Spawn(name, func(c *actor.Context) {
			joined <- group.Join(c, "room")
			c.Receive(actor.Loop(actor.On(func(s string) { got <- c.Self().Name() + " got " + s })))
		})
		if err := <-joined; err != nil {
			log.Fatal(err)
		}
	}
	if err := a.GroupReady(ctx, "room", 1); err != nil { // b shares the topic
		log.Fatal(err)
	}
	a.System().Spawn("host", func(c *actor.Context) { group.Broadcast(c, "room", "hello") })

	var lines []string
	for range 2 {
		select {
		case s := <-got:
			lines = append(lines, s)
		case <-ctx.Done():
			lines = append(lines, ctx.Err().Error())
		}
	}
	slices.Sort(lines) // ann and bob, on two peers, in either order
	fmt.Println(lines)
	// Output: [ann got hello bob got hello]
}

// The directory is what the other peers of the mesh advertise (with
// WithGroups): their named actors, groups and addresses, signed by each
// peer's key. A peer that connects asks for the advertisements it lacks;
// Whereis looks in the directory before it asks any peer.
func ExampleDirectory_Await() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := groupNode(ctx), groupNode(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)
	b.System().Spawn("db", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.On(func(q string) { c.Reply("rows for " + q) })))
	})
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		log.Fatal(err)
	}

	refs, err := a.Directory().Await(ctx, "db") // until b's advertisement is here
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(refs), refs[0].Peer() == b.ID().String(), refs[0].Name())

	db, err := a.Whereis(ctx, "db") // found in the directory
	if err != nil {
		log.Fatal(err)
	}
	reply, err := actor.AskAs[string](ctx, a.System(), db, "users")
	fmt.Println(db == refs[0], reply, err)
	// Output:
	// 1 true db
	// true rows for users <nil>
}
