package peer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"go.uber.org/goleak"
)

// Close: drains, stops the actors, leaves no goroutine, is idempotent,
// and waits for or gives up on a concurrent Close.

// TestCloseDrainsAndLeavesNoGoroutine: Close writes what waits in the
// outbound links before it closes the host (every message arrives, in
// order), and once both nodes are closed no goroutine of theirs is left.
func TestCloseDrainsAndLeavesNoGoroutine(t *testing.T) {
	// libp2p starts a few process-wide goroutines once; a first node
	// started and closed before the snapshot lets them be.
	warm := newTestNode(t)
	if err := warm.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	others := goleak.IgnoreCurrent()
	defer func() { // libp2p's goroutines may take a moment to return after Close
		testutil.EventuallyNil(t, 10*time.Second, func() error { return goleak.Find(others) })
	}()

	start := func() *Node {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := New(ctx, quiet(), local())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := start(), start()
	// Fewer than one-way sends may queue for one peer (three quarters of
	// the default link queue, 49,152): on a busy machine the writer may
	// send nothing before the loop ends, and more would be dead letters.
	const total = 40_000
	got := make(chan int, total)
	sink, err := b.System().Spawn("sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(n int) { got <- n; c.Receive(h) })
		c.Receive(h)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	for i := range total {
		a.System().Send(sink, i)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("close with %d messages queued: %v", a.Stats().QueuedUser, err)
	}
	if dl := a.System().DeadLetters(); dl != 0 {
		t.Fatalf("%d dead letters", dl)
	}
	for want := range total {
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("message %d arrived as %d", want, n)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d messages arrived", want, total)
		}
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFailedNewLeavesNoGoroutine: a New that fails after it started the
// host, the router and groups stops them all; one that fails to start the
// host closes the resource manager it made for it.
func TestFailedNewLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		if n, err := New(context.Background(), quiet(), local(), WithGroups(true), WithActorOptions(actor.WithLoops(0))); err == nil {
			_ = n.Close(context.Background())
			t.Fatal("an actor system of no loops was accepted")
		}
		// libp2p refuses the address: the resource manager made before
		// the host must be closed too.
		if n, err := New(context.Background(), quiet(), local(), WithListenAddrs("/not/a/multiaddr")); err == nil {
			_ = n.Close(context.Background())
			t.Fatal("a bad listen address was accepted")
		}
	}
	// Goroutines of libp2p's may take a moment to return after Close.
	testutil.EventuallyNil(t, 10*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > before+2 {
			return fmt.Errorf("%d goroutines after three failed starts, %d before", n, before)
		}
		return nil
	})
}

func TestCloseIsIdempotentAndStopsActors(t *testing.T) {
	n := newTestNode(t)
	if _, err := n.System().Spawn("a", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if n.System().Actors() != 0 {
		t.Fatalf("%d actors after close", n.System().Actors())
	}
}

// TestConcurrentCloseWaitsOrGivesUp: a Close while another is closing the
// node waits for it and returns its result, or gives up with its own
// context.
func TestConcurrentCloseWaitsOrGivesUp(t *testing.T) {
	n := newTestNode(t)
	// An actor busy in a handler keeps the first Close in its shutdown.
	release, busy := make(chan struct{}), make(chan struct{})
	slow, err := n.System().Spawn("slow", func(c *actor.Context) {
		c.Receive(actor.On(func(string) { close(busy); <-release }))
	})
	if err != nil {
		t.Fatal(err)
	}
	n.System().Send(slow, "work")
	select {
	case <-busy:
	case <-time.After(10 * time.Second):
		t.Fatal("the actor did not start its work")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- n.Close(ctx) }()
	for !n.closing.Load() {
		select {
		case <-ctx.Done():
			t.Fatal("the first Close did not begin")
		case <-time.After(time.Millisecond):
		}
	}
	brief, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if err := n.Close(brief); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second Close while the first waits: %v, want its deadline", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first Close: %v", err)
	}
	if err := n.Close(brief); err != nil { // done: at once, whatever the context
		t.Fatalf("Close after Close: %v", err)
	}
	var none *Node // what a failed New returns
	if err := none.Close(ctx); err != nil {
		t.Fatalf("Close of a nil node: %v", err)
	}
}

// TestCloseWithAnExpiredContextLeavesNoGoroutine: a node with groups,
// advertisements and the DHT, closed with a context already done, says
// so and still releases what it started: the DHT, the advertisements'
// topic, the loops' watchdog.
func TestCloseWithAnExpiredContextLeavesNoGoroutine(t *testing.T) {
	others := goleak.IgnoreCurrent()
	n, err := New(context.Background(), quiet(), local(), WithGroups(true), WithDHT())
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Close(done); err == nil {
		t.Log("Close with a done context returned no error (everything was already idle)")
	}
	// Goroutines of libp2p's may take a moment to return after Close.
	testutil.EventuallyNil(t, 10*time.Second, func() error {
		if err := goleak.Find(others); err != nil {
			return fmt.Errorf("after Close with a done context: %w", err)
		}
		return nil
	})
}
