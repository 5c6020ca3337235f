package routing

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// TestReaderBudgetPerAddress: the peers of one source address share
// its bytes, their floors included, whatever the node's room; another
// address, or a connection of no bounded address, is not held back.
func TestReaderBudgetPerAddress(t *testing.T) {
	b := readerBudget{limit: 1000, floor: 50, perAddr: 60}
	for i := range 3 { // three identities from one address, each under its floor
		src := readerSource{peer: libp2ppeer.ID(rune('a' + i)), addr: "10.0.0.1"}
		err := b.reserve(src, 25, true)
		if i < 2 && err != nil {
			t.Fatalf("identity %d refused within the address's share: %v", i, err)
		}
		if i == 2 && !errors.Is(err, errReaderAddress) {
			t.Fatalf("the third identity of one address got %v, want errReaderAddress", err)
		}
	}
	if err := b.reserve(readerSource{peer: "x", addr: "10.0.0.2"}, 50, true); err != nil {
		t.Fatalf("another address refused: %v", err)
	}
	if err := b.reserve(readerSource{peer: "y"}, 100, true); err != nil {
		t.Fatalf("a connection of no bounded address refused: %v", err)
	}
	if st := b.stat(); st.addrs != 2 || st.held != 200 || st.refused != 1 {
		t.Fatalf("stat %+v, want 2 addresses, 200 bytes, 1 refused", st)
	}
	b.release(readerSource{peer: "a", addr: "10.0.0.1"}, 25, true)
	if err := b.reserve(readerSource{peer: "c", addr: "10.0.0.1"}, 25, true); err != nil {
		t.Fatalf("refused after a release made room at the address: %v", err)
	}
}

// TestReaderBudgetStreamCount: past the node's stream count, a peer
// with a stream holding bytes starts no other, one with none may (the
// floor); a stream that already holds may grow; an ended one makes room.
func TestReaderBudgetStreamCount(t *testing.T) {
	b := readerBudget{limit: 1 << 20, floor: 1 << 20, maxStreams: 2}
	a, c, d := readerSource{peer: "A"}, readerSource{peer: "C"}, readerSource{peer: "D"}
	for i := range 2 { // two streams of A
		if err := b.reserve(a, 1, true); err != nil {
			t.Fatalf("stream %d refused within the count: %v", i+1, err)
		}
	}
	if err := b.reserve(a, 1, true); !errors.Is(err, errReaderStreams) {
		t.Fatalf("a third stream of a peer holding two got %v, want errReaderStreams", err)
	}
	if err := b.reserve(a, 10, false); err != nil {
		t.Fatalf("a holding stream could not grow: %v", err)
	}
	if err := b.reserve(c, 1, true); err != nil {
		t.Fatalf("a peer with no stream holding was refused its first: %v", err)
	}
	if err := b.reserve(c, 1, true); !errors.Is(err, errReaderStreams) {
		t.Fatalf("a second stream past the count got %v", err)
	}
	for i := range 100 { // sybils: one stream each
		_ = b.reserve(readerSource{peer: libp2ppeer.ID(rune('a' + i))}, 1, true)
	}
	if st := b.stat(); st.streams != 2+1+100 {
		t.Fatalf("%d streams hold, want 103 (the count plus one per other peer)", st.streams)
	}
	b.release(a, 11, true)
	if err := b.reserve(d, 1, true); err != nil {
		t.Fatalf("refused after a stream ended: %v", err)
	}
}

// TestSourceAddr: the per-address key of a connection's remote address.
func TestSourceAddr(t *testing.T) {
	for _, c := range []struct {
		addr     string
		loopback bool
		want     string
	}{
		{"/ip4/10.1.2.3/tcp/4001", false, "10.1.2.3"},
		{"/ip4/10.1.2.3/udp/4001/quic-v1", false, "10.1.2.3"},
		{"/ip6/2001:db8:1:2:3:4:5:6/tcp/1", false, "2001:db8:1:2::/64"},
		{"/ip4/127.0.0.1/tcp/1", false, ""},
		{"/ip4/127.0.0.1/tcp/1", true, "127.0.0.1"},
		{"/ip4/10.1.2.3/tcp/4001/p2p/12D3KooWGRUVh7mWaqHvUF7tE7Ho7iaT4vKwwCefTHfMj7uyaTzk/p2p-circuit", false, ""},
		{"/dns4/example.invalid/tcp/1", false, ""},
	} {
		m, err := ma.NewMultiaddr(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := sourceAddr(m, c.loopback); got != c.want {
			t.Errorf("sourceAddr(%s, %v) = %q, want %q", c.addr, c.loopback, got, c.want)
		}
	}
	if sourceAddr(nil, true) != "" {
		t.Error("no address has a key")
	}
}

// TestReaderBudgetSharedAddress: two identities from one address (the
// loopback, bounded here as a test's stand-in for a remote host) share
// its bytes: with room node-wide and each under its floor, the second's
// large message is refused, its stream reset and counted, once the first
// holds the address's share.
func TestReaderBudgetSharedAddress(t *testing.T) {
	cfg := config{Logger: testutil.QuietLogger(), readerPerAddr: 230 << 10, readerLoopback: true}
	h, r, sys := testPeerTuned(t, cfg, nil)
	_ = spawnSink(t, sys)
	first := newRawFrames(t, h)
	_, body, err := first.reg.Encode(bytes.Repeat([]byte{0x44}, 3*fragmentData))
	if err != nil {
		t.Fatal(err)
	}
	total := uint64(len(body))
	piece := func(i int) []byte { return body[i*fragmentData : min((i+1)*fragmentData, len(body))] }
	first.fragment(fragmentBody{Type: "bytes", Total: total, Data: piece(0)})
	first.fragment(fragmentBody{Data: piece(1)})
	testutil.EventuallyNil(t, 5*time.Second, func() error { // the reader's progress has no event
		if n := r.Stats().ReaderBytes; n < 2*fragmentData {
			return fmt.Errorf("the first peer's reader holds %d bytes, want %d", n, 2*fragmentData)
		}
		return nil
	})
	if st := r.Stats(); st.ReaderAddrs != 1 || st.ReaderStreams != 1 {
		t.Fatalf("stats %+v, want 1 address and 1 stream holding", st)
	}
	other := newRawFrames(t, h) // another identity, the same address
	other.fragment(fragmentBody{Type: "bytes", Total: total, Data: piece(0)})
	other.fragment(fragmentBody{Data: piece(1)})
	if !other.reset() || r.Stats().ReaderRefused == 0 {
		t.Fatalf("the second identity's large message was not refused: %+v", r.Stats())
	}
}

// TestReaderPerAddressFitsMaxFrame: with a maximum frame raised past the
// per-address default, a peer connected from an address may still hold
// its floor (one maximum large message), and so may a second one of the
// same address; a third may not.
func TestReaderPerAddressFitsMaxFrame(t *testing.T) {
	cfg := config{Logger: testutil.QuietLogger(), MaxFrame: 64 << 20}
	_, r, _ := testPeerTuned(t, cfg, nil)
	b := &r.readers
	if b.perAddr < b.floor {
		t.Fatalf("per-address bound %d below the floor %d", b.perAddr, b.floor)
	}
	for i := range 3 {
		err := b.reserve(readerSource{peer: libp2ppeer.ID(rune('a' + i)), addr: "10.0.0.1"}, b.floor, true)
		if i < 2 && err != nil {
			t.Fatalf("peer %d of an address refused its floor with a 64 MiB maximum frame: %v", i, err)
		}
		if i == 2 && !errors.Is(err, errReaderAddress) {
			t.Fatalf("a third floor from one address got %v, want errReaderAddress", err)
		}
	}
}
