package discovery

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

func TestVerifyAdvertisements(t *testing.T) {
	h := testhost.NewHost(t, libp2p.NoListenAddrs)
	other := testhost.NewHost(t, libp2p.NoListenAddrs)

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

// An advertisement is kept at most maxAdTTL (or the node's TTL, if longer)
// whatever TTL it asks for, and the directory holds at most
// maxDirectoryBytes of them: a peer cannot fill it for good with
// advertisements of made-up peers.
func TestDirectoryBoundsWhatPeersAskFor(t *testing.T) {
	h := testhost.NewHost(t, libp2p.NoListenAddrs)
	d := &Directory{cfg: adsConfig{TTL: defaultTTL}, h: h, peers: make(map[libp2ppeer.ID]adEntry)}
	madeUp := func() *Advertisement {
		return &Advertisement{Peer: []byte(testhost.NewPeerID(t)), TTLSeconds: math.MaxUint32}
	}
	ad := madeUp()
	start := time.Now()
	if ok, _ := d.store(ad, []byte("signed"), time.Duration(ad.TTLSeconds)*time.Second, false, ""); !ok {
		t.Fatal("not stored")
	}
	id, _ := libp2ppeer.IDFromBytes(ad.Peer)
	if left := d.peers[id].expires.Sub(start); left > maxAdTTL+time.Second {
		t.Fatalf("kept for %v, want at most %v", left, maxAdTTL)
	}
	// Large advertisements: the byte bound, not the count, stops them.
	big := make([]byte, MaxAdBytes)
	stored := 0
	for range maxDirectory {
		ad := madeUp()
		if ok, _ := d.store(ad, big, time.Minute, false, ""); ok {
			stored++
		}
	}
	if want := (maxDirectoryBytes - len("signed")) / MaxAdBytes; stored != want || d.bytes > maxDirectoryBytes {
		t.Fatalf("%d of %d-byte advertisements stored (%d bytes), want %d within %d bytes", stored, MaxAdBytes, d.bytes, want, maxDirectoryBytes)
	}
	// What goes makes room.
	d.mu.Lock()
	d.dropLocked(id)
	for other := range d.peers {
		d.dropLocked(other)
		break
	}
	d.mu.Unlock()
	if ok, _ := d.store(madeUp(), big, time.Minute, false, ""); !ok {
		t.Fatal("no room made by the advertisements dropped")
	}
}

// In a full directory, the advertisement of a peer this node is connected
// to takes the place of one of a peer it is not connected to: a flood of
// made-up peers cannot keep out the peers next to this node.
func TestConnectedPeersGetIntoAFullDirectory(t *testing.T) {
	h := testhost.NewHost(t)
	next := testhost.NewHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, libp2ppeer.AddrInfo{ID: next.ID(), Addrs: next.Addrs()}); err != nil {
		t.Fatal(err)
	}
	d := &Directory{cfg: adsConfig{TTL: defaultTTL}, h: h, peers: make(map[libp2ppeer.ID]adEntry)}
	for range maxDirectory {
		if ok, _ := d.store(&Advertisement{Peer: []byte(testhost.NewPeerID(t)), TTLSeconds: 60}, []byte("made up"), time.Minute, false, ""); !ok {
			t.Fatal("the directory filled up early")
		}
	}
	if ok, _ := d.store(&Advertisement{Peer: []byte(testhost.NewPeerID(t)), TTLSeconds: 60}, []byte("far"), time.Minute, false, ""); ok {
		t.Fatal("a peer out of reach got into a full directory")
	}
	if ok, _ := d.store(&Advertisement{Peer: []byte(next.ID()), TTLSeconds: 60}, []byte("next"), time.Minute, false, ""); !ok {
		t.Fatal("a connected peer was kept out of a full directory")
	}
	if n := len(d.peers); n != maxDirectory {
		t.Fatalf("%d advertisements held, want %d", n, maxDirectory)
	}
}
