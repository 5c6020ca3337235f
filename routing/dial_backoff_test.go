package routing

import (
	"context"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/troupe-mesh/troupe/actor"
)

// A peer an earlier dial failed to reach (the DHT's, a redial's: libp2p's
// swarm then refuses dials to its addresses for 5 s and more) is dialed
// again for a send: the message arrives instead of failing with a dial
// backoff (at 100 peers, many first asks failed so).
func TestSendDialsThroughADialBackoff(t *testing.T) {
	ha, _, sysA := testRouter(t, 0)
	hb, _, sysB := testRouter(t, 0)
	got := spawnSink(t, sysB)
	ha.Peerstore().AddAddrs(hb.ID(), hb.Addrs(), time.Hour)
	sw := ha.Network().(*swarm.Swarm)
	for _, a := range hb.Addrs() {
		sw.Backoff().AddBackoff(hb.ID(), a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ha.Connect(ctx, libp2ppeer.AddrInfo{ID: hb.ID()}); err == nil {
		t.Fatal("a dial in libp2p's backoff succeeded: the test shows nothing")
	}
	to, err := actor.NewRef(hb.ID().String(), "sink")
	if err != nil {
		t.Fatal(err)
	}
	sysA.Send(to, "through the backoff")
	select {
	case m := <-got:
		if m != "through the backoff" {
			t.Fatalf("got %v", m)
		}
	case <-ctx.Done():
		t.Fatal("the message did not arrive: the send's dial stayed in the backoff")
	}
}
