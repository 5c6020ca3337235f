package transport_test

import (
	"testing"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
)

// TestInboundAddAllocatesNothing: an Envelope built at Inbound.Add's call
// stays on the caller's stack. (Passed on as a pointer to the function
// value behind Add it would escape: a heap allocation per message read
// from the network.)
func TestInboundAddAllocatesNothing(t *testing.T) {
	var port *transport.Port
	s, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		port = p
		return nil, nil, nil
	}, actor.WithPeer("me"))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	to, _ := actor.NewRef("me", "nobody") // dead letters when flushed
	far, _ := actor.NewRef("far", "x")
	var msg any = "m"
	in := port.NewInbound()
	defer in.Close()
	// Nodes come from blocks of many: a block's allocation (or a pool's,
	// which -race empties at random) is shared by its messages.
	avg := testing.AllocsPerRun(2000, func() {
		in.Add(&transport.Envelope{To: to, From: far, Msg: msg, Corr: 1})
	})
	if avg >= 0.5 {
		t.Fatalf("%.2f allocations per Add, want none but the blocks'", avg)
	}
}
