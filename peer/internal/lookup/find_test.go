package lookup

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// fakeDHT names providers, above the threshold or not, and counts its
// lookups.
type fakeDHT struct {
	large     bool
	providers []libp2ppeer.AddrInfo
	finds     atomic.Int32
}

func (d *fakeDHT) Large() bool { return d.large }

func (d *fakeDHT) FindNameEach(_ context.Context, _ string, each func(libp2ppeer.AddrInfo) bool) error {
	d.finds.Add(1)
	for _, ai := range d.providers {
		if !each(ai) {
			return nil
		}
	}
	return nil
}

// TestFindConfirmsProviders: a provider that does not host the name is
// passed over and the next one's own Ref is the answer, which is then
// cached; a name no provider confirms is cached as a miss; without a
// DHT, or below the threshold, Find fails with ErrNotLarge and asks
// nothing.
func TestFindConfirmsProviders(t *testing.T) {
	liar, host := testhost.NewPeerID(t), testhost.NewPeerID(t)
	dht := &fakeDHT{large: true, providers: []libp2ppeer.AddrInfo{{ID: liar}, {ID: host}}}
	var asked atomic.Int32
	f := New(Config{
		DHT: func() DHT { return dht },
		Connect: func(context.Context, libp2ppeer.AddrInfo) error {
			t.Error("dialed a provider with no addresses")
			return nil
		},
		Ask: func(_ context.Context, id libp2ppeer.ID, name string) (actor.Ref, error) {
			asked.Add(1)
			if id != host || name != "svc" {
				return actor.Ref{}, actor.ErrNoSuchActor
			}
			return actor.NewRef(id.String(), name)
		},
	})
	ctx := t.Context()
	ref, err := f.Find(ctx, "svc")
	if err != nil || ref.Peer() != host.String() || ref.Name() != "svc" {
		t.Fatalf("Find(svc) = %v, %v; want svc on %v", ref, err, host)
	}
	if again, err := f.Find(ctx, "svc"); err != nil || again != ref || dht.finds.Load() != 1 {
		t.Fatalf("a second Find: %v, %v, %d DHT lookups; want the cached answer", again, err, dht.finds.Load())
	}
	if _, err := f.Find(ctx, "nobody"); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("Find(nobody): %v, want ErrNoSuchActor", err)
	}
	before := asked.Load()
	if _, err := f.Find(ctx, "nobody"); !errors.Is(err, actor.ErrNoSuchActor) || asked.Load() != before {
		t.Fatalf("a second Find(nobody): %v, %d more asks; want the cached miss", err, asked.Load()-before)
	}
	dht.large = false
	if _, err := f.Find(ctx, "other"); !errors.Is(err, ErrNotLarge) {
		t.Fatalf("below the threshold: %v, want ErrNotLarge", err)
	}
	none := New(Config{DHT: func() DHT { return nil }})
	if _, err := none.Find(ctx, "svc"); !errors.Is(err, ErrNotLarge) {
		t.Fatalf("without a DHT: %v, want ErrNotLarge", err)
	}
}

// TestFindStopsAtTheFirstConfirmed: the providers are confirmed as the
// walk yields them, and the first one confirmed ends the walk: the
// providers after it are not asked.
func TestFindStopsAtTheFirstConfirmed(t *testing.T) {
	host, later := testhost.NewPeerID(t), testhost.NewPeerID(t)
	dht := &fakeDHT{large: true, providers: []libp2ppeer.AddrInfo{{ID: host}, {ID: later}}}
	var asked atomic.Int32
	f := New(Config{
		DHT: func() DHT { return dht },
		Ask: func(_ context.Context, id libp2ppeer.ID, name string) (actor.Ref, error) {
			asked.Add(1)
			return actor.NewRef(id.String(), name)
		},
	})
	ref, err := f.Find(t.Context(), "svc")
	if err != nil || ref.Peer() != host.String() || asked.Load() != 1 {
		t.Fatalf("Find(svc) = %v, %v after %d asks; want svc on %v, 1 ask", ref, err, asked.Load(), host)
	}
}
