package peer

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/actor"
)

// withHostOptions adds libp2p options to a test node's host.
func withHostOptions(opts ...libp2p.Option) Option {
	return func(c *config) error { c.hostOpts = append(c.hostOpts, opts...); return nil }
}

// TestAskThroughARelay: a node that is not reachable reserves a slot on
// its relay; another peer reaches it through the relay alone (the
// connection is limited: relayed) and asks its actor as it would a
// direct one.
func TestAskThroughARelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	relay := newTestNode(t, WithRelayService(true), withHostOptions(libp2p.ForceReachabilityPublic()))
	hidden := newTestNode(t, WithRelays(*relay.AddrInfo()), withHostOptions(libp2p.ForceReachabilityPrivate()))
	// AutoRelay advertises public relay addresses only: on loopback the
	// test reserves itself, and builds the circuit address.
	var rsv *client.Reservation
	for rsv == nil {
		r, err := client.Reserve(ctx, hidden.Host(), *relay.AddrInfo())
		switch {
		case err == nil:
			rsv = r
		case ctx.Err() != nil:
			t.Fatalf("no reservation on the relay: %v", err)
		default: // the relay service starts once the relay saw itself public
			time.Sleep(50 * time.Millisecond)
		}
	}
	circuit, err := ma.NewMultiaddr(relay.AddrInfo().Addrs[0].String() + "/p2p/" + relay.ID().String() + "/p2p-circuit")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hidden.System().Spawn("echo", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) { c.Reply(m) })))
	}); err != nil {
		t.Fatal(err)
	}
	caller := newTestNode(t, WithRelay(true))
	if err := caller.Connect(ctx, libp2ppeer.AddrInfo{ID: hidden.ID(), Addrs: []ma.Multiaddr{circuit}}); err != nil {
		t.Fatal(err)
	}
	conns := caller.Host().Network().ConnsToPeer(hidden.ID())
	if len(conns) != 1 || !conns[0].Stat().Limited || !caller.Relayed(hidden.ID()) || caller.Relayed(relay.ID()) {
		t.Fatalf("connections %v: want one, relayed (and the relay's direct)", conns)
	}
	for relay.Reachability() != network.ReachabilityPublic || hidden.Reachability() != network.ReachabilityPrivate {
		if ctx.Err() != nil { // no event tells of the host's own record
			t.Fatalf("reachability: relay %v, hidden %v; want public and private", relay.Reachability(), hidden.Reachability())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ref, _ := Ref(hidden.ID(), "echo")
	reply, err := actor.AskAs[string](ctx, caller.System(), ref, "through the relay")
	if err != nil || reply != "through the relay" {
		t.Fatalf("ask through the relay: %q, %v", reply, err)
	}
}
