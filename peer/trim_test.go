package peer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// TestQuietPeersGoFirst: the guard marks a peer quiet from its own
// sweeps (no actor message either way since it connected), and a trim
// takes the quiet peers past a third of the grace period first: a peer
// that carried a message, now past its grace and unprotected, stays
// while a quiet one goes.
func TestQuietPeersGoFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	const grace = 3 * time.Second
	// High above the peers connected here: only sweepNow trims.
	hub := newTestNode(t, WithConnections(Connections{Low: 2, High: 8, Grace: grace}))
	talker := newTestNode(t)
	sink, got := spawnSink(t, talker)
	if err := talker.Connect(ctx, *hub.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if err := hub.SendCtx(ctx, sink, 1); err != nil {
		t.Fatal(err)
	}
	receive(t, ctx, got, 1)
	// The message's grace passes (the grace period is the clock: no
	// event tells of its end): the talker is unprotected, and old.
	testutil.EventuallyNil(t, 20*time.Second, func() error {
		if err := hub.guard.sweepNow(ctx, false); err != nil {
			return err
		}
		if hub.cm.IsProtected(talker.ID(), "") {
			return errors.New("the talker is still protected")
		}
		return nil
	})
	before := time.Now()
	for range 2 {
		if err := newTestNode(t).Connect(ctx, *hub.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	connected := time.Now()
	// One trim once the quiet peers are past their third of the grace:
	// any earlier one would take the talker, then the only peer past its
	// wait (TestToTrim has the third's edge).
	time.Sleep(time.Until(connected.Add(quietGrace(grace))))
	if err := hub.guard.sweepNow(ctx, true); err != nil {
		t.Fatal(err)
	}
	took := time.Since(before)
	if n := len(hub.Host().Network().Peers()); n != 2 {
		t.Fatalf("%d peers connected after the trim, want 2", n)
	}
	if hub.Host().Network().Connectedness(talker.ID()) != network.Connected {
		t.Fatal("the peer that carried a message was trimmed before a quiet one")
	}
	if took >= grace {
		t.Logf("the trim came %v after the quiet peers connected, past the whole grace (a loaded machine)", took)
	}
}
