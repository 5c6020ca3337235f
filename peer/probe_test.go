package peer

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWithLiveness: the option's bounds.
func TestWithLiveness(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {MinLiveness, true}, {time.Minute, true}, {MinLiveness - 1, false}, {-time.Second, false}} {
		var cfg config
		err := WithLiveness(c.d)(&cfg)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidOption)) {
			t.Fatalf("WithLiveness(%v): %v", c.d, err)
		}
	}
	cfg := defaultConfig()
	if err := cfg.validate(); err != nil || cfg.liveness != DefaultLiveness {
		t.Fatalf("default liveness %v (%v), want %v", cfg.liveness, err, DefaultLiveness)
	}
}

// TestRoundTripKnownWithoutAPing: a node knows the round trip to a peer
// soon after it connects, with no ping asked for (a probe that never
// dials: latency's TestPingNeverDials).
func TestRoundTripKnownWithoutAPing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := newTestNode(t), newTestNode(t)
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	for a.Host().Peerstore().LatencyEWMA(b.ID()) == 0 || b.Host().Peerstore().LatencyEWMA(a.ID()) == 0 {
		select {
		case <-ctx.Done(): // the peerstore tells of no update
			t.Fatal("no round trip recorded within 10 s of connecting")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
