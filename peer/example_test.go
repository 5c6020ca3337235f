package peer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

type Greet struct{ Name string }

func newNode(ctx context.Context) *peer.Node {
	reg, _ := codec.NewRegistry()
	codec.MustRegister[Greet](reg, "example.Greet") // the same name on every peer
	n, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"), peer.WithRegistry(reg))
	if err != nil {
		panic(err)
	}
	return n
}

// Two peers in one process: an actor on b answers an Ask from a exactly as
// a local actor would.
func Example_twoPeers() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := newNode(ctx), newNode(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		panic(err)
	}
	b.System().Spawn("greeter", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(g Greet) { c.Reply("hello, " + g.Name); c.Receive(h) })
		c.Receive(h)
	})
	greeter, _ := peer.Ref(b.ID(), "greeter")
	reply, err := a.System().Ask(ctx, greeter, Greet{"a"})
	fmt.Println(reply, err)
	// Output: hello, a <nil>
}
