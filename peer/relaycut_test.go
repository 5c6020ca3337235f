package peer

import (
	"context"
	"errors"
	"testing"
	"time"

	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/troupe-mesh/troupe/actor"
)

// TestRelayCutIsNeverSilent: a relay whose data limit for strangers
// cuts a busy relayed connection (no direct one to move to) loses what was in flight,
// and says so: the sender's monitor of the receiving actor gets Down with
// ErrNodeDown, and the messages that arrived are the first ones sent, in
// order, with no gap.
func TestRelayCutIsNeverSilent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	limit := &relayv2.RelayLimit{Duration: time.Minute, Data: 32 << 10}
	_, hidden, caller := relayedTrio(t, ctx, WithRelayStrangerLimit(limit.Duration, limit.Data))
	got := make(chan int, 1<<16)
	if _, err := hidden.System().Spawn("sink", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) {
			if i, ok := m.(int); ok {
				got <- i
			}
		})))
	}); err != nil {
		t.Fatal(err)
	}
	sink, _ := Ref(hidden.ID(), "sink")
	// The sender monitors the sink and sends until Down: 100-byte
	// messages, so that the relay's 32 KiB pass within a few hundred.
	down, sent := make(chan actor.Down, 1), make(chan int, 1)
	pad := string(make([]byte, 100))
	if _, err := caller.System().Spawn("sender", func(c *actor.Context) {
		c.Monitor(sink)
		n := 0
		var step func()
		step = func() {
			for range 10 {
				c.Send(sink, n)
				c.Send(sink, pad)
				n++
			}
			c.ReceiveWithin(time.Millisecond,
				actor.On(func(d actor.Down) { sent <- n; down <- d }),
				actor.Timeout(step))
		}
		step()
	}); err != nil {
		t.Fatal(err)
	}
	var d actor.Down
	select {
	case d = <-down:
	case <-ctx.Done():
		t.Fatalf("no Down after the relay's data limit: %d messages arrived", len(got))
	}
	if !errors.Is(d.Reason, actor.ErrNodeDown) || d.Ref != sink {
		t.Fatalf("Down %+v; want the sink, ErrNodeDown", d)
	}
	n := <-sent
	arrived := len(got)
	for want := range arrived {
		if i := <-got; i != want {
			t.Fatalf("message %d arrived as the %dth: a gap or a reordering", i, want)
		}
	}
	if arrived == 0 || arrived > n {
		t.Fatalf("%d of %d messages arrived", arrived, n)
	}
	// Each number went with 100 bytes of padding: what arrived fits in
	// the relay's limit, so the limit is what cut it.
	if arrived*len(pad) > int(limit.Data) || arrived*len(pad) < int(limit.Data)/4 {
		t.Fatalf("%d messages of more than 100 bytes arrived through a %d-byte limit; want about the limit's worth", arrived, limit.Data)
	}
	if st := caller.Stats(); st.PeersDown == 0 {
		t.Fatalf("the caller saw no peer down: %+v", st)
	}
	t.Logf("%d of %d messages arrived before the relay cut the connection; the sender got Down", arrived, n)
}
