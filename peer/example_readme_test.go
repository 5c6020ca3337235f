package peer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
)

// A peer in a program, with an actor every other peer of the LAN can
// ask: the README's embedding example (compiled, not run: mDNS would
// reach the LAN).
func Example_embedding() {
	ctx := context.Background()
	node, err := peer.New(ctx, peer.WithKeyFile("identity.key"), peer.WithMDNS(true))
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close(ctx)
	fmt.Println("peer", node.ID()) // this node's peer ID: the <peer> of its Refs

	node.System().Spawn("greeter", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.On(func(name string) { c.Reply("hello, " + name) })))
	})

	// node.Peers() fills as mDNS finds peers (about 2 s on a LAN).
	for _, id := range node.Peers() {
		ref, _ := peer.Ref(id, "greeter") // "<peer ID>/greeter"
		reply, err := actor.AskAs[string](ctx, node.System(), ref, "ann")
		fmt.Println(reply, err)
	}
}

// Whereis finds an actor by name anywhere in the mesh: on this node, in
// the directory of advertisements, then by asking the connected peers.
func ExampleNode_Whereis() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := connectedPair(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)
	b.System().Spawn("db", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) })
	ref, err := a.Whereis(ctx, "db")
	fmt.Println(ref.Peer() == b.ID().String(), ref.Name(), err)
	_, err = a.Whereis(ctx, "nobody")
	fmt.Println(errors.Is(err, actor.ErrNoSuchActor))
	// Output:
	// true db <nil>
	// true
}
