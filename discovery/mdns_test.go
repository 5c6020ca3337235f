package discovery

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

func TestCheckMesh(t *testing.T) {
	for _, ok := range []string{"default", "a", "team-7", strings.Repeat("x", 32)} {
		if err := CheckMesh(ok); err != nil {
			t.Fatalf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "Upper", "has space", "dot.ted", "under_score", strings.Repeat("x", 33), "ünï"} {
		if err := CheckMesh(bad); !errors.Is(err, ErrBadMesh) {
			t.Fatalf("%q: %v, want ErrBadMesh", bad, err)
		}
	}
	if got := ServiceName("lab"); got != "_troupe-lab._udp" {
		t.Fatalf("service name %q", got)
	}
}

// mDNS itself is tested in integration/netns_test.go, inside network
// namespaces: here it would multicast on the machine's real interfaces.

// A dial to an announced peer that fails is tried again, a bounded number
// of times, without waiting for the peer to announce itself again (peers
// that hear of each other together dial each other together, and over TCP
// that can fail both dials); one the peer refused is not.
func TestFailedMDNSDialsAreRetried(t *testing.T) {
	h := testhost.NewHost(t, libp2p.NoListenAddrs)
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := libp2ppeer.IDFromPrivateKey(k)
	for _, tc := range []struct {
		name      string
		failFirst int   // dials that fail before one succeeds
		err       error // how they fail
		want      int   // dials in all
	}{
		{"succeeds on the third try", 2, errors.New("simultaneous open"), 3},
		{"gives up", 1000, errors.New("simultaneous open"), 1 + dialRetries},
		{"refused", 1000, fmt.Errorf("peer: connect: %w", ErrRefused), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var dials atomic.Int32
				m := newMDNS(h, "_troupe-test._udp", func(context.Context, libp2ppeer.AddrInfo) error {
					if int(dials.Add(1)) <= tc.failFirst {
						return tc.err
					}
					return nil
				}, slog.New(slog.DiscardHandler))
				m.HandlePeerFound(libp2ppeer.AddrInfo{ID: other})
				time.Sleep(time.Minute) // fake time: every retry is due
				synctest.Wait()
				if got := int(dials.Load()); got != tc.want {
					t.Errorf("%d dials, want %d", got, tc.want)
				}
				if err := m.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
