package peer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// withHostOptions adds libp2p options to a test node's host.
func withHostOptions(opts ...libp2p.Option) Option {
	return func(c *config) error { c.hostOpts = append(c.hostOpts, opts...); return nil }
}

// relayedTrio starts a relay (public; relayOpts added), a hidden node
// (private) with a reservation on it, and a caller connected to the
// hidden node through the relay only. AutoRelay advertises public relay
// addresses only: on loopback the test reserves itself and builds the
// circuit address.
func relayedTrio(t *testing.T, ctx context.Context, relayOpts ...Option) (relay, hidden, caller *Node) {
	t.Helper()
	return relayedTrioAs(t, ctx, nil, nil, relayOpts...)
}

// relayedTrioAs is relayedTrio with options added to the hidden node
// and to the caller (their identities, say).
func relayedTrioAs(t *testing.T, ctx context.Context, hiddenOpts, callerOpts []Option, relayOpts ...Option) (relay, hidden, caller *Node) {
	t.Helper()
	relay = newTestNode(t, append([]Option{WithRelayService(true), withHostOptions(libp2p.ForceReachabilityPublic())}, relayOpts...)...)
	hidden = newTestNode(t, append([]Option{WithRelays(*relay.AddrInfo()), withHostOptions(libp2p.ForceReachabilityPrivate())}, hiddenOpts...)...)
	// The relay service starts once the relay saw itself public.
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		if _, err := client.Reserve(ctx, hidden.Host(), *relay.AddrInfo()); err != nil {
			return fmt.Errorf("no reservation on the relay: %w", err)
		}
		return nil
	})
	circuit, err := ma.NewMultiaddr(relay.AddrInfo().Addrs[0].String() + "/p2p/" + relay.ID().String() + "/p2p-circuit")
	if err != nil {
		t.Fatal(err)
	}
	caller = newTestNode(t, append([]Option{WithRelay(true)}, callerOpts...)...)
	if err := caller.Connect(ctx, libp2ppeer.AddrInfo{ID: hidden.ID(), Addrs: []ma.Multiaddr{circuit}}); err != nil {
		t.Fatal(err)
	}
	return relay, hidden, caller
}

// TestAskThroughARelay: a node that is not reachable reserves a slot on
// its relay; another peer reaches it through the relay alone (the
// connection is limited: relayed) and asks its actor as it would a
// direct one.
func TestAskThroughARelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	relay, hidden, caller := relayedTrio(t, ctx)
	if _, err := hidden.System().Spawn("echo", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) { c.Reply(m) })))
	}); err != nil {
		t.Fatal(err)
	}
	conns := caller.Host().Network().ConnsToPeer(hidden.ID())
	if len(conns) != 1 || !conns[0].Stat().Limited || !caller.Relayed(hidden.ID()) || caller.Relayed(relay.ID()) {
		t.Fatalf("connections %v: want one, relayed (and the relay's direct)", conns)
	}
	testutil.EventuallyNil(t, 30*time.Second, func() error { // no event tells of the host's own record
		if r, h := relay.Reachability(), hidden.Reachability(); r != network.ReachabilityPublic || h != network.ReachabilityPrivate {
			return fmt.Errorf("reachability: relay %v, hidden %v; want public and private", r, h)
		}
		return nil
	})
	ref, _ := Ref(hidden.ID(), "echo")
	reply, err := actor.AskAs[string](ctx, caller.System(), ref, "through the relay")
	if err != nil || reply != "through the relay" {
		t.Fatalf("ask through the relay: %q, %v", reply, err)
	}
}

// msgStreams returns the troupe user streams of n to id, per connection:
// on relayed connections and on direct ones.
func msgStreams(n *Node, id libp2ppeer.ID) (relayed, direct int) {
	for _, c := range n.Host().Network().ConnsToPeer(id) {
		for _, s := range c.GetStreams() {
			if s.Stat().Direction != network.DirOutbound || !strings.HasPrefix(string(s.Protocol()), "/troupe/msg/") {
				continue
			}
			if c.Stat().Limited {
				relayed++
			} else {
				direct++
			}
		}
	}
	return relayed, direct
}

// TestLinkMovesOffTheRelay: a link whose stream runs over a relay moves
// to a direct connection once one exists (as after hole punching), before
// the relay's limits cut it: the relayed stream ends cleanly, the next
// messages go on a stream over the direct connection, every message
// arrives in order and no loss is declared.
func TestLinkMovesOffTheRelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, hidden, caller := relayedTrio(t, ctx)
	got := make(chan int, 1000)
	if _, err := hidden.System().Spawn("sink", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.On(func(i int) { got <- i })))
	}); err != nil {
		t.Fatal(err)
	}
	sink, _ := Ref(hidden.ID(), "sink")
	next, want := 0, 0
	expect := func() { // every message sent so far, in order
		t.Helper()
		for ; want < next; want++ {
			select {
			case i := <-got:
				if i != want {
					t.Fatalf("got %d, want %d: out of order or lost", i, want)
				}
			case <-ctx.Done():
				t.Fatalf("message %d never arrived", want)
			}
		}
	}
	for ; next < 50; next++ {
		caller.System().Send(sink, next)
	}
	expect()
	if r, d := msgStreams(caller, hidden.ID()); r != 1 || d != 0 {
		t.Fatalf("before a direct connection: %d relayed and %d direct streams, want 1 and 0", r, d)
	}
	moveOffRelay(t, ctx, caller, hidden, func() {
		caller.System().Send(sink, next)
		next++
	})
	for end := next + 50; next < end; next++ {
		caller.System().Send(sink, next)
	}
	expect()
	if r, d := msgStreams(caller, hidden.ID()); r != 0 || d != 1 {
		t.Fatalf("after moving: %d relayed and %d direct streams, want 0 and 1", r, d)
	}
	if a, b := caller.Stats(), hidden.Stats(); a.LossesDeclared+b.LossesDeclared+a.PeersDown+b.PeersDown != 0 {
		t.Fatalf("losses or downs: caller %+v, hidden %+v", a, b)
	}
}

// TestAsksMoveOffTheRelay: a link that only carries Asks from plain code
// moves off the relay as one that carries sends does. An Ask writes its
// request on the calling goroutine when the link's writer sleeps
// (routing's write-through); on a relayed stream it must leave that to
// the writer, which is what looks for a direct connection.
func TestAsksMoveOffTheRelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, hidden, caller := relayedTrio(t, ctx)
	if _, err := hidden.System().Spawn("echo", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) { c.Reply(m) })))
	}); err != nil {
		t.Fatal(err)
	}
	echo, _ := Ref(hidden.ID(), "echo")
	ask := func(i int) {
		t.Helper()
		if got, err := actor.AskAs[int](ctx, caller.System(), echo, i); err != nil || got != i {
			t.Fatalf("ask %d: %d, %v", i, got, err)
		}
	}
	i := 0
	for ; i < 10; i++ {
		ask(i)
	}
	if r, d := msgStreams(caller, hidden.ID()); r != 1 || d != 0 {
		t.Fatalf("before a direct connection: %d relayed and %d direct streams, want 1 and 0", r, d)
	}
	moveOffRelay(t, ctx, caller, hidden, func() {
		ask(i)
		i++
	})
	ask(i)
	if r, d := msgStreams(caller, hidden.ID()); r != 0 || d != 1 {
		t.Fatalf("after moving: %d relayed and %d direct streams, want 0 and 1", r, d)
	}
	if a, b := caller.Stats(), hidden.Stats(); a.LossesDeclared+b.LossesDeclared+a.PeersDown+b.PeersDown != 0 {
		t.Fatalf("losses or downs: caller %+v, hidden %+v", a, b)
	}
}

// moveOffRelay dials hidden directly from caller, beside their relayed
// connection (as hole punching does), and calls traffic every 10 ms until
// caller's link has moved off the relay: the writer looks for a direct
// connection at most once a second, between batches.
func moveOffRelay(t *testing.T, ctx context.Context, caller, hidden *Node, traffic func()) {
	t.Helper()
	caller.Host().Peerstore().AddAddrs(hidden.ID(), hidden.AddrInfo().Addrs, time.Minute)
	if _, err := caller.Host().Network().DialPeer(network.WithForceDirectDial(ctx, "test"), hidden.ID()); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for n := 0; caller.Stats().MovedOffRelay == 0; n++ {
		traffic()
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("after %d sends or asks, the link is still on the relay", n)
		}
	}
}
