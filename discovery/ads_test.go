package discovery

import (
	"errors"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p"
)

func TestVerifyAdvertisements(t *testing.T) {
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	other, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	good, err := Sign(h, &Advertisement{Peer: []byte(h.ID()), Actors: []string{"echo"}, TTLSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := Verify(good, h.ID())
	if err != nil || ad.Actors[0] != "echo" {
		t.Fatalf("good advertisement: %+v %v", ad, err)
	}
	if _, err := Verify(good, other.ID()); !errors.Is(err, ErrBadAd) {
		t.Fatalf("relayed under another origin: %v", err)
	}
	forged, _ := Sign(other, &Advertisement{Peer: []byte(h.ID())})
	var s signedAd
	_ = cbor.Unmarshal(good, &s)
	s.Sig[0] ^= 0xff
	tampered, _ := cbor.Marshal(s)
	unsigned, _ := cbor.Marshal(signedAd{Ad: s.Ad})
	many := make([]string, MaxAdNames+1)
	for i := range many {
		many[i] = "a"
	}
	tooMany, _ := Sign(h, &Advertisement{Peer: []byte(h.ID()), Actors: many})
	for name, data := range map[string][]byte{
		"forged":    forged,
		"tampered":  tampered,
		"unsigned":  unsigned,
		"garbage":   []byte("garbage"),
		"oversize":  []byte(strings.Repeat("x", MaxAdBytes+1)),
		"too many":  tooMany,
		"truncated": good[:len(good)/2],
	} {
		if _, err := Verify(data, h.ID()); !errors.Is(err, ErrBadAd) {
			t.Fatalf("%s: %v, want ErrBadAd", name, err)
		}
	}
}
