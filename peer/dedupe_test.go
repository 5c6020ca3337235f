package peer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

func TestDupsToClose(t *testing.T) {
	now := time.Unix(1000, 0)
	const grace = 10 * time.Second
	old, older, young := now.Add(-20*time.Second), now.Add(-30*time.Second), now.Add(-time.Second)
	for _, tc := range []struct {
		name  string
		conns []dupConn
		want  []int
	}{
		{"none", nil, nil},
		{"one, idle and old", []dupConn{{opened: older}}, nil},
		{"two idle: the newest stays", []dupConn{{opened: old}, {opened: older}}, []int{1}},
		{"two idle, as old: the last stays", []dupConn{{opened: old}, {opened: old}}, []int{0}},
		{"the one with a stream stays, though older", []dupConn{{opened: old}, {opened: older, streams: 1}}, []int{0}},
		{"both carry streams", []dupConn{{opened: older, streams: 2}, {opened: old, streams: 1}}, nil},
		{"the newest stays though in its grace", []dupConn{{opened: young}, {opened: older}}, []int{1}},
		{"an idle one within its grace stays", []dupConn{{opened: young}, {opened: young.Add(time.Millisecond)}}, nil},
		{"three idle: the newest stays", []dupConn{{opened: older}, {opened: old}, {opened: older}}, []int{0, 2}},
		{"three: two go", []dupConn{{opened: old}, {opened: older, streams: 1}, {opened: older}}, []int{0, 2}},
	} {
		if got := dupsToClose(tc.conns, now, grace); !slices.Equal(got, tc.want) {
			t.Errorf("%s: closes %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClosesDups(t *testing.T) {
	a, b := newTestNode(t).ID(), newTestNode(t).ID()
	if closesDups(a, b) == closesDups(b, a) {
		t.Fatalf("both ends, or neither, close: %v / %v", closesDups(a, b), closesDups(b, a))
	}
}

// TestDuplicateConnectionsClosed: two peers that dialed each other at
// once hold two connections; once the grace period passed, one is
// closed, and the two stay connected all along, and a message still goes
// through.
func TestDuplicateConnectionsClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	budget := WithConnections(Connections{Grace: 300 * time.Millisecond})
	dedupe := func(c *config) error { c.dedupeConns = true; return nil }
	var a, b *Node
	for try := 0; ; try++ {
		if try == 40 {
			t.Fatal("40 pairs dialed each other at once and none got two connections")
		}
		a, b = newTestNode(t, budget, dedupe), newTestNode(t, budget, dedupe)
		// Neither end pins the other (Connect would): dial through the host.
		var wg sync.WaitGroup
		for _, d := range [][2]*Node{{a, b}, {b, a}} {
			wg.Go(func() { _ = d[0].Host().Connect(ctx, *d[1].AddrInfo()) })
		}
		wg.Wait()
		if len(a.Host().Network().ConnsToPeer(b.ID())) >= 2 && len(b.Host().Network().ConnsToPeer(a.ID())) >= 2 {
			break
		}
		_ = a.Close(ctx)
		_ = b.Close(ctx)
	}
	var subs []event.Subscription
	for _, n := range []*Node{a, b} {
		sub, err := n.Host().EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs = append(subs, sub)
	}
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		if ab, ba := len(a.Host().Network().ConnsToPeer(b.ID())), len(b.Host().Network().ConnsToPeer(a.ID())); ab > 1 || ba > 1 {
			return fmt.Errorf("still %d and %d connections", ab, ba)
		}
		return nil
	})
	closer := a
	if closesDups(b.ID(), a.ID()) {
		closer = b
	}
	if closer.guard.dupsClosed.Load() == 0 {
		t.Error("the end with the lower ID closed no duplicate")
	}
	for i, sub := range subs {
		select {
		case e := <-sub.Out():
			t.Fatalf("end %d: connectedness changed: %+v", i, e)
		default:
		}
	}
	for _, n := range []*Node{a, b} {
		if c := n.Host().Network().Connectedness(map[*Node]*Node{a: b, b: a}[n].ID()); c != network.Connected {
			t.Fatalf("not connected after the duplicate went: %v", c)
		}
	}
	ref, got := spawnSink(t, b)
	if err := a.SendCtx(ctx, ref, 5); err != nil {
		t.Fatal(err)
	}
	receive(t, ctx, got, 5)
}
