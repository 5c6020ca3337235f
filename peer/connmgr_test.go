package peer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

func TestConnectionsOptions(t *testing.T) {
	for name, c := range map[string]Connections{
		"negative low":         {Low: -1},
		"negative high":        {High: -1},
		"negative grace":       {Grace: -time.Second},
		"high below low":       {Low: 10, High: 5},
		"high below def. low":  {High: 8},
		"high zero with low 0": {Low: 0, High: 0, Grace: -1},
	} {
		if _, err := New(context.Background(), quiet(), local(), WithConnections(c)); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	for c, want := range map[Connections]Connections{
		{}:                  {Low: DefaultConnsLow, High: DefaultConnsHigh, Grace: DefaultConnsGrace},
		{Low: 40}:           {Low: 40, High: 40, Grace: DefaultConnsGrace},
		{Low: 2, High: 4}:   {Low: 2, High: 4, Grace: DefaultConnsGrace},
		{Grace: time.Hour}:  {Low: DefaultConnsLow, High: DefaultConnsHigh, Grace: time.Hour},
		{High: 100, Low: 0}: {Low: DefaultConnsLow, High: 100, Grace: DefaultConnsGrace},
	} {
		cfg := defaultConfig()
		if err := WithConnections(c)(&cfg); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if err := cfg.validate(); err != nil || cfg.conns != want {
			t.Errorf("%+v: %+v, %v; want %+v", c, cfg.conns, err, want)
		}
	}
}

// spawnSink spawns an actor called "sink" on n that hands every int it
// receives to the channel returned, and stops at the string "stop".
func spawnSink(t *testing.T, n *Node) (actor.Ref, <-chan int) {
	t.Helper()
	got := make(chan int, 1024)
	ref, err := n.System().Spawn("sink", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) {
			switch m := m.(type) {
			case int:
				got <- m
			case string:
				if m == "stop" {
					c.Stop()
				}
			}
		})))
	})
	if err != nil {
		t.Fatal(err)
	}
	remote, _ := Ref(n.ID(), ref.Name())
	return remote, got
}

// receive waits for want on got.
func receive(t *testing.T, ctx context.Context, got <-chan int, want int) {
	t.Helper()
	select {
	case i := <-got:
		if i != want {
			t.Fatalf("received %d, want %d", i, want)
		}
	case <-ctx.Done():
		t.Fatalf("%d never arrived", want)
	}
}

// TestTrimKeepsWhatIsBusy: a hub with a budget of 2 to 4 peers, which 8
// peers dialed, trims the idle ones until 2 are left, one of them the
// peer whose actor one of its actors monitors. No monitor fires, no
// Down reaches anyone, and messages to a trimmed peer dial it again and
// arrive in order.
func TestTrimKeepsWhatIsBusy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const low = 2
	hub := newTestNode(t, WithConnections(Connections{Low: low, High: 4, Grace: 300 * time.Millisecond}))
	spokes := make([]*Node, 8)
	sinks := make([]actor.Ref, len(spokes))
	got := make([]<-chan int, len(spokes))
	for i := range spokes {
		spokes[i] = newTestNode(t)
		sinks[i], got[i] = spawnSink(t, spokes[i])
		// The spokes dial and pin the hub; the hub pins none of them.
		if err := spokes[i].Connect(ctx, *hub.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	// Every spoke has a link from the hub that carried a message.
	for i := range spokes {
		if err := hub.SendCtx(ctx, sinks[i], 0); err != nil {
			t.Fatal(err)
		}
		receive(t, ctx, got[i], 0)
	}
	// The hub monitors the first spoke's sink; what the monitor sees
	// goes to downs.
	downs := make(chan actor.Down, 8)
	watching := make(chan struct{})
	if _, err := hub.System().Spawn("watcher", func(c *actor.Context) {
		c.Monitor(sinks[0])
		close(watching)
		c.Receive(actor.Loop(actor.On(func(d actor.Down) { downs <- d })))
	}); err != nil {
		t.Fatal(err)
	}
	<-watching
	// Trim until the traffic's grace has passed: then the idle spokes go
	// (the grace period is the clock here: no event tells of its end).
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		n := len(hub.Host().Network().Peers())
		if n <= low {
			return nil
		}
		if err := hub.guard.sweepNow(ctx, true); err != nil {
			t.Fatalf("still %d peers connected: %v", n, err)
		}
		return fmt.Errorf("still %d peers connected, want %d", n, low)
	})
	if n := len(hub.Host().Network().Peers()); n != low {
		t.Fatalf("%d peers connected after trimming, want %d", n, low)
	}
	if hub.Host().Network().Connectedness(spokes[0].ID()) != network.Connected || !hub.cm.IsProtected(spokes[0].ID(), busyTag) {
		t.Fatal("the monitored peer was trimmed, or is not protected")
	}
	var trimmed *Node
	var at int
	for i, s := range spokes {
		if hub.Host().Network().Connectedness(s.ID()) != network.Connected {
			trimmed, at = s, i
			break
		}
	}
	// The trimmed spoke sees the hub gone too (the hub closed it).
	testutil.Eventually(t, 30*time.Second, "the trimmed spoke's connection to the hub closed", func() bool {
		return trimmed.Host().Network().Connectedness(hub.ID()) != network.Connected
	})
	// Messages to the trimmed spoke dial it again, in order.
	for i := 1; i <= 100; i++ {
		if err := hub.SendCtx(ctx, sinks[at], i); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 100; i++ {
		receive(t, ctx, got[at], i)
	}
	if hub.Host().Network().Connectedness(trimmed.ID()) != network.Connected {
		t.Fatal("the trimmed spoke is not connected again")
	}
	// The monitored sink is still watched, and nothing fired: a probe
	// through the watcher's monitor would have come after a Down.
	select {
	case d := <-downs:
		t.Fatalf("a monitor fired after trimming: %+v", d)
	default:
	}
	spokes[0].System().Send(sinks[0], "stop")
	select {
	case d := <-downs:
		if errors.Is(d.Reason, actor.ErrNodeDown) {
			t.Fatalf("the monitor fired with %v, want the sink's own exit", d.Reason)
		}
	case <-ctx.Done():
		t.Fatal("the monitor of a sink that stopped did not fire: it was lost with a trim")
	}
}

// TestNoTrimBelowLow: with fewer connections than the low water mark,
// trimming closes none, however idle.
func TestNoTrimBelowLow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hub := newTestNode(t, WithConnections(Connections{Low: 8, High: 10, Grace: time.Millisecond}))
	var ids []libp2ppeer.ID
	for range 4 {
		s := newTestNode(t)
		if err := s.Connect(ctx, *hub.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID())
	}
	// Past the grace period: the trim compares the connections' age
	// with it, so the passing of time is what there is to wait for.
	time.Sleep(10 * time.Millisecond)
	if err := hub.guard.sweepNow(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if hub.Host().Network().Connectedness(id) != network.Connected {
			t.Fatalf("peer %v trimmed below the low water mark", id)
		}
	}
}

// TestDialBudget: discovery dials no more peers once the node is
// connected to Low of them, and says so with ErrDialBudget.
func TestDialBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := newTestNode(t, WithConnections(Connections{Low: 2, High: 4}))
	for i := range 3 {
		other := newTestNode(t)
		err := n.connectFound(ctx, *other.AddrInfo())
		switch {
		case i < 2 && err != nil:
			t.Fatalf("dial %d: %v", i, err)
		case i == 2 && !errors.Is(err, ErrDialBudget):
			t.Fatalf("dial beyond the budget: %v, want ErrDialBudget", err)
		case i == 2 && n.Host().Network().Connectedness(other.ID()) == network.Connected:
			t.Fatal("dialed beyond the budget")
		}
	}
	// A bootstrap peer is dialed whatever the budget.
	boot := newTestNode(t)
	n.cfg.bootstrap = append(n.cfg.bootstrap, *boot.AddrInfo())
	if err := n.connectFound(ctx, *boot.AddrInfo()); err != nil {
		t.Fatalf("a bootstrap peer beyond the budget: %v", err)
	}
	if f := n.DialFailures(); len(f) != 0 {
		t.Fatalf("a skipped dial counted as a failure: %+v", f)
	}
}

// TestDialBudgetInALargeMesh: once the DHT judges the mesh large (a
// threshold of 1: at once), discovery dials half of Low, not Low.
func TestDialBudgetInALargeMesh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := newTestNode(t, WithConnections(Connections{Low: 4, High: 8}), WithDHT(), WithLookupAbove(1))
	for i := range 3 {
		other := newTestNode(t)
		err := n.connectFound(ctx, *other.AddrInfo())
		switch {
		case i < 2 && err != nil:
			t.Fatalf("dial %d: %v", i, err)
		case i == 2 && !errors.Is(err, ErrDialBudget):
			t.Fatalf("dial %d in a large mesh with Low 4: %v, want ErrDialBudget", i, err)
		}
	}
	if got := dialTarget(24, false); got != 24 {
		t.Fatalf("dialTarget(24, small) = %d, want 24", got)
	}
}

// TestGuardTrimsAboveHigh: nobody asks for a trim; the guard trims once
// High peers are connected and the grace period passed, until fewer are
// (down to Low, or more when some were in their grace period then).
func TestGuardTrimsAboveHigh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hub := newTestNode(t, WithConnections(Connections{Low: 2, High: 4, Grace: 100 * time.Millisecond}))
	for range 6 {
		if err := newTestNode(t).Connect(ctx, *hub.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	testutil.EventuallyNil(t, 20*time.Second, func() error {
		if n := len(hub.Host().Network().Peers()); n >= 4 {
			return fmt.Errorf("%d peers still connected", n)
		}
		return nil
	})
}

// TestDeparture: a disconnection is a departure in a mesh of at most
// High peers, and not in a larger one, nor in one the lookup threshold
// judges large whatever the peers it sees (a narrow directory holds
// only the connected peers' advertisements).
func TestDeparture(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := newTestNode(t)
	var dir atomic.Pointer[discovery.Directory]
	for high, want := range map[int]bool{1: false, 2: true, 3: true} {
		left := departure(n.Host(), &dir, high, new(meshSize))
		if len(n.Host().Network().Peers()) == 0 {
			if err := n.Connect(ctx, *newTestNode(t).AddrInfo()); err != nil {
				t.Fatal(err)
			}
		}
		if got := left(""); got != want { // a mesh of 2: n and the other
			t.Errorf("mesh of 2, high %d: departed %v, want %v", high, got, want)
		}
	}
	large := newTestNode(t, WithDHT(), WithLookupAbove(1)) // large from its first look
	if !large.size.Large() {
		t.Fatal("a threshold of 1 is not judged large")
	}
	if departure(n.Host(), &dir, 3, large.size)("") {
		t.Error("a large mesh of 2, high 3: departed")
	}
}

// TestTrimChecksAgainBeforeClosing: a message sent to a peer after the
// sweep found it idle, while the trim is choosing, keeps its connection:
// the trim checks each peer again right before closing it.
func TestTrimChecksAgainBeforeClosing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Two peers stay below the high mark: only the trims asked for here
	// run (sweepNow), none of the guard's own.
	hub := newTestNode(t, WithConnections(Connections{Low: 1, High: 3, Grace: 200 * time.Millisecond}))
	spokes := make(map[libp2ppeer.ID]actor.Ref)
	got := make(map[libp2ppeer.ID]<-chan int)
	for range 2 {
		s := newTestNode(t)
		spokes[s.ID()], got[s.ID()] = spawnSink(t, s)
		if err := s.Connect(ctx, *hub.AddrInfo()); err != nil { // the hub pins neither
			t.Fatal(err)
		}
	}
	// Each peer the trim picks gets a message first, from the guard's
	// goroutine, once the sweep is over.
	var picked []libp2ppeer.ID // written by the guard during sweepNow
	hook := func(ids []libp2ppeer.ID) {
		for _, id := range ids {
			if err := hub.SendCtx(ctx, spokes[id], 7); err != nil {
				t.Error(err)
			}
			picked = append(picked, id)
		}
	}
	hub.guard.beforeClose.Store(&hook)
	// The grace period is the clock here: sweep until a trim picks one.
	testutil.Eventually(t, 30*time.Second, "a trim that picked a peer", func() bool {
		if err := hub.guard.sweepNow(ctx, true); err != nil {
			t.Fatalf("no trim picked a peer: %v", err)
		}
		return len(picked) > 0
	})
	id := picked[0]
	if hub.Host().Network().Connectedness(id) != network.Connected {
		t.Fatal("the trim closed the connection of a peer just sent a message")
	}
	receive(t, ctx, got[id], 7)
}
