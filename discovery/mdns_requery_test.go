package discovery

import (
	"context"
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestMDNSRequeriesForMissingPeers: a peer mDNS connected to that is no
// longer connected makes the service query again (missing), until
// knownFor has passed, less and less often; with none known, or all
// connected, nothing does.
func TestMDNSRequeriesForMissingPeers(t *testing.T) {
	h := testhost.NewHost(t, libp2p.NoListenAddrs)
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := libp2ppeer.IDFromPrivateKey(k)
	m := newMDNS(h, "_troupe-test._udp", func(context.Context, libp2ppeer.AddrInfo) error { return nil }, slog.New(slog.DiscardHandler))
	defer m.Close(context.Background())
	t0 := time.Now()
	if m.missing(t0) {
		t.Fatal("missing with no peer known")
	}
	m.knew(other, t0)
	if !m.missing(t0.Add(requeryEvery)) {
		t.Fatal("a known peer not connected is not missing")
	}
	if m.missing(t0.Add(knownFor)) {
		t.Fatal("still missing after knownFor")
	}
	if len(m.known) != 0 {
		t.Fatalf("known %v after knownFor", m.known)
	}
	for range knownMax + 10 {
		k, _, _ := crypto.GenerateEd25519Key(rand.Reader)
		id, _ := libp2ppeer.IDFromPrivateKey(k)
		m.knew(id, t0)
	}
	if len(m.known) != knownMax {
		t.Fatalf("%d known, want at most %d", len(m.known), knownMax)
	}
	// While peers stay missing the requeries slow down, to requeryMax;
	// once none is, they are requeryEvery apart again.
	wait := requeryEvery
	for _, want := range []time.Duration{2 * requeryEvery, 4 * requeryEvery} {
		if wait = nextRequery(wait, true); wait != want {
			t.Fatalf("next requery in %v, want %v", wait, want)
		}
	}
	for range 10 {
		wait = nextRequery(wait, true)
	}
	if wait != requeryMax || nextRequery(wait, false) != requeryEvery {
		t.Fatalf("requeries %v apart at most, then %v: want %v, %v", wait, nextRequery(wait, false), requeryMax, requeryEvery)
	}
}
