package integration

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
)

// Test messages, registered on every node under the same names.
type (
	Ping     struct{ N int }
	Pong     struct{ N int }
	Batch    struct{ Seq int }
	Ack      struct{ Upto int }
	Blob     struct{ Data []byte }
	Crash    struct{ Why string }
	Greeting struct{ Text string }
)

func registry(t testing.TB, opts ...codec.Option) *codec.Registry {
	t.Helper()
	reg, err := codec.NewRegistry(opts...)
	if err != nil {
		t.Fatal(err)
	}
	codec.MustRegister[Ping](reg, "test.Ping")
	codec.MustRegister[Pong](reg, "test.Pong")
	codec.MustRegister[Batch](reg, "test.Batch")
	codec.MustRegister[Ack](reg, "test.Ack")
	codec.MustRegister[Blob](reg, "test.Blob")
	codec.MustRegister[Crash](reg, "test.Crash")
	codec.MustRegister[Greeting](reg, "test.Greeting")
	codec.MustRegister[Big](reg, "test.Big")
	return reg
}

// newNode starts a node on 127.0.0.1 (TCP only) that is closed when the
// test ends.
func newNode(t testing.TB, opts ...peer.Option) *peer.Node {
	t.Helper()
	return newNodeWithin(t, 10*time.Second, opts...)
}

// newNodeWithin is newNode given d to start (the big scale runs start
// hundreds of peers on a loaded machine).
func newNodeWithin(t testing.TB, d time.Duration, opts ...peer.Option) *peer.Node {
	t.Helper()
	base := []peer.Option{
		peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"),
		peer.WithLogger(testutil.QuietLogger()),
		peer.WithRegistry(registry(t)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	n, err := peer.New(ctx, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Logf("close: %v", err)
		}
	})
	return n
}

// pair starts two connected nodes.
func pair(t testing.TB) (*peer.Node, *peer.Node) {
	t.Helper()
	a, b := newNode(t), newNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %T", *new(T))
		panic("unreachable")
	}
}

func spawn(t testing.TB, n *peer.Node, name string, b actor.Behavior, opts ...actor.SpawnOption) actor.Ref {
	t.Helper()
	ref, err := n.System().Spawn(name, b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// monitor spawns an actor on n that monitors target and passes on every
// Down it gets, and returns once the monitor is set.
func monitor(t testing.TB, n *peer.Node, target actor.Ref) <-chan actor.Down {
	t.Helper()
	downs := make(chan actor.Down, 2)
	ready := make(chan struct{})
	spawn(t, n, "", func(c *actor.Context) {
		c.Monitor(target)
		close(ready)
		var h actor.Case
		h = actor.On(func(d actor.Down) { downs <- d; c.Receive(h) })
		c.Receive(h)
	})
	recv(t, ready)
	return downs
}

// echo answers every Ping with a Pong of the same number.
func echo(c *actor.Context) {
	var h actor.Case
	h = actor.On(func(p Ping) { c.Reply(Pong(p)); c.Receive(h) })
	c.Receive(h)
}

func askCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
