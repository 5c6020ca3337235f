package relay

import (
	"bytes"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestRelayPolicy: two members get no limit, a stranger at either end
// the stranger limit; a PSK or allowlist makes everyone a member; a
// limit's message rounds to whole seconds, at least one.
func TestRelayPolicy(t *testing.T) {
	a, b, s := testhost.NewPeerID(t), testhost.NewPeerID(t), testhost.NewPeerID(t)
	p := relayPolicy{members: memberSet([]libp2ppeer.ID{a, b}), stranger: *relayv2.DefaultLimit()}
	if p.limit(a, b) != nil || p.limit(a, a) != nil {
		t.Fatal("members get a limit")
	}
	for _, l := range []*relayv2.RelayLimit{p.limit(a, s), p.limit(s, b), p.limit(s, s)} {
		if l == nil || *l != *relayv2.DefaultLimit() {
			t.Fatalf("a stranger's limit %v; want libp2p's default", l)
		}
	}
	if all := (relayPolicy{all: true, stranger: p.stranger}); all.limit(s, a) != nil {
		t.Fatal("with a PSK or allowlist, a connected peer is a stranger")
	}
	if m := limitMsg(nil); m == nil || m.Duration != nil || m.Data != nil {
		t.Fatalf("no limit told as %v; want an empty limit", m)
	}
	if m := limitMsg(&relayv2.RelayLimit{Duration: 300 * time.Millisecond, Data: 5}); m.GetDuration() != 1 || m.GetData() != 5 {
		t.Fatalf("limit told as %v", m)
	}
}

// TestRelayFrame: a length-prefixed message is found whole, waited for
// when partial, refused when too long or with a bad length; rest is
// what follows it.
func TestRelayFrame(t *testing.T) {
	msg := []byte("hello")
	b := append(delimit(msg), "tail"...)
	if got, ok, bad := frame(b); !ok || bad || !bytes.Equal(got, msg) || string(rest(b)) != "tail" {
		t.Fatalf("frame %q: %q %v %v, rest %q", b, got, ok, bad, rest(b))
	}
	for _, partial := range [][]byte{nil, b[:1], b[:3]} {
		if _, ok, bad := frame(partial); ok || bad {
			t.Fatalf("frame of %q: ok %v bad %v; want more to come", partial, ok, bad)
		}
	}
	if _, _, bad := frame(delimit(make([]byte, relayMsgMax+1))); !bad {
		t.Fatal("an over-long message is not refused")
	}
	if _, _, bad := frame(bytes.Repeat([]byte{0xff}, 11)); !bad {
		t.Fatal("a bad length is not refused")
	}
	if earliest(time.Time{}, time.Unix(5, 0)) != time.Unix(5, 0) || earliest(time.Unix(3, 0), time.Unix(5, 0)) != time.Unix(3, 0) || !earliest(time.Time{}, time.Time{}).IsZero() {
		t.Fatal("earliest")
	}
}
