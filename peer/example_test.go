package peer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
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

// connectedPair starts two nodes, a connected to b.
func connectedPair(ctx context.Context) (a, b *peer.Node) {
	a, b = newNode(ctx), newNode(ctx)
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		panic(err)
	}
	return a, b
}

// Two peers in one process: b's actor answers an Ask from a exactly as a
// local actor would. Both listen on loopback only; a dials b's address.
func Example_twoPeers() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close(ctx)

	b.System().Spawn("greeter", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.On(func(name string) { c.Reply("hello, " + name) })))
	})
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil { // b's ID and addresses
		log.Fatal(err)
	}
	greeter, _ := peer.Ref(b.ID(), "greeter") // "<b's peer ID>/greeter"
	reply, err := actor.AskAs[string](ctx, a.System(), greeter, "ann")
	fmt.Println(reply, err) // hello, ann <nil>
	// Output: hello, ann <nil>
}

// Finding an actor by name on another peer, and starting one there: a
// behavior travels by the name its peer registered it under, with
// arguments of a registered type.
func ExampleNode_SpawnRemote() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := connectedPair(ctx)
	defer a.Close(ctx)
	defer b.Close(ctx)
	// b lets peers start greeters; the argument is the greeting.
	peer.RegisterBehaviorOf(b, "greeter", func(word string) (actor.Behavior, error) {
		return func(c *actor.Context) {
			c.Receive(actor.Loop(actor.On(func(g Greet) { c.Reply(word + ", " + g.Name) })))
		}, nil
	})
	if _, err := a.Lookup(ctx, b.ID(), "remote.hi"); errors.Is(err, actor.ErrNoSuchActor) {
		fmt.Println("no actor called remote.hi yet")
	}
	hi, err := a.SpawnRemote(ctx, b.ID(), "greeter", "remote.hi", "hi")
	if err != nil {
		panic(err)
	}
	found, _ := a.Lookup(ctx, b.ID(), "remote.hi")
	reply, err := a.System().Ask(ctx, found, Greet{"a"})
	fmt.Println(found == hi, reply, err)
	_, err = a.SpawnRemote(ctx, b.ID(), "shouter", "", "HI")
	fmt.Println(errors.Is(err, peer.ErrUnknownBehavior))
	_, err = a.SpawnRemote(ctx, b.ID(), "greeter", "", 42)
	fmt.Println(errors.Is(err, peer.ErrSpawnArgs))
	// Output:
	// no actor called remote.hi yet
	// true hi, a <nil>
	// true
	// true
}

// A monitor across peers fires like a local one: with the actor's exit
// reason when it stops, and with actor.ErrNodeDown when its peer goes
// away.
func Example_monitorAcrossPeers() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := connectedPair(ctx)
	defer a.Close(ctx)
	worker, _ := b.System().Spawn("worker", func(c *actor.Context) {
		c.Receive(actor.On(func(string) {})) // stops after one message
	})
	idle, _ := b.System().Spawn("idle", func(c *actor.Context) {
		c.Receive(actor.On(func(Greet) {}))
	})
	downs := make(chan actor.Down, 2)
	a.System().Spawn("watcher", func(c *actor.Context) {
		c.Monitor(worker)
		c.Monitor(idle)
		c.Send(worker, "done") // sent after the monitors: see below
		var h actor.Case
		h = actor.On(func(d actor.Down) { downs <- d; c.Receive(h) })
		c.Receive(h)
	})
	d := <-downs
	// Signals and messages travel apart: the worker may have stopped
	// before the monitor reached it (ErrNoSuchActor) or after (nil).
	fmt.Println(d.Ref.Name(), d.Reason == nil || errors.Is(d.Reason, actor.ErrNoSuchActor))
	b.Host().Close() // b vanishes without a word from its actors
	d = <-downs
	fmt.Println(d.Ref.Name(), errors.Is(d.Reason, actor.ErrNodeDown))
	b.Close(ctx)
	// Output:
	// worker true
	// idle true
}
