package routing

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// TestReaderBudgetNodeWide: past the node's limit a peer holding its
// floor or more is refused, one below it still reserves; releases make
// room; many identities hold at most the limit plus a floor each.
func TestReaderBudgetNodeWide(t *testing.T) {
	b := readerBudget{limit: 100, floor: 10}
	a, c := readerSource{peer: "A"}, readerSource{peer: "C"}
	if b.reserve(a, 95, true) != nil || b.reserve(c, 8, true) != nil {
		t.Fatal("refused below the limit, or below the floor")
	}
	if b.reserve(a, 1, false) == nil || b.reserve(c, 3, false) == nil {
		t.Fatal("admitted past the limit at or over the floor")
	}
	b.release(a, 50, false)
	if b.reserve(c, 30, false) != nil {
		t.Fatal("refused after a release made room")
	}
	if st := b.stat(); st.held != 83 || st.peers != 2 || st.refused != 2 {
		t.Fatalf("stat %+v, want 83 bytes, 2 peers, 2 refused", st)
	}
	for i := range 100 {
		_ = b.reserve(readerSource{peer: libp2ppeer.ID(rune('a' + i))}, 10, true)
	}
	if st := b.stat(); st.held > 100+100*10 {
		t.Fatalf("held %d", st.held)
	}
	b = readerBudget{limit: 100}
	_ = b.reserve(a, 100, true)
	b.release(a, 100, true)
	if st := b.stat(); st.peers != 0 || st.streams != 0 {
		t.Fatalf("a peer holding nothing is still counted: %+v", st)
	}
}

// TestReaderBudgetRefusesSybils: with a node-wide reader budget of 230
// KiB and no floor, one peer's large message in progress (two 56 KiB
// fragments: some 136 KiB reserved with the frame buffer) leaves too
// little for another's: that stream is reset and counted, the first
// goes through, and what they held is given back.
func TestReaderBudgetRefusesSybils(t *testing.T) {
	h, r, sys := testPeerTuned(t, config{Logger: testutil.QuietLogger(), readerMemory: 230 << 10, readerFloor: 1}, nil)
	got := spawnSink(t, sys)
	first := newRawFrames(t, h)
	_, body, err := first.reg.Encode(bytes.Repeat([]byte{0x43}, 3*fragmentData))
	if err != nil {
		t.Fatal(err)
	}
	total := uint64(len(body))
	piece := func(i int) []byte { return body[i*fragmentData : min((i+1)*fragmentData, len(body))] }
	first.fragment(fragmentBody{Type: "bytes", Total: total, Data: piece(0)})
	first.fragment(fragmentBody{Data: piece(1)})
	testutil.EventuallyNil(t, 5*time.Second, func() error { // the reader's progress has no event
		if held := r.Stats().ReaderBytes; held < 2*fragmentData {
			return fmt.Errorf("the first peer's reader holds %d bytes, want %d", held, 2*fragmentData)
		}
		return nil
	})
	before := r.Stats().StreamsReset
	other := newRawFrames(t, h) // another identity
	other.fragment(fragmentBody{Type: "bytes", Total: total, Data: piece(0)})
	other.fragment(fragmentBody{Data: piece(1)})
	if !other.reset() || r.Stats().StreamsReset != before+1 {
		t.Fatal("the second peer's large message was not refused")
	}
	first.fragment(fragmentBody{Data: piece(2)})
	first.fragment(fragmentBody{Data: piece(3)})
	select {
	case m := <-got:
		if b, ok := m.([]byte); !ok || len(b) != 3*fragmentData {
			t.Fatalf("got %T of %d bytes", m, len(b))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first peer's message did not arrive")
	}
	// The stream's frame buffer stays charged while it lives.
	if err := first.s.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyNil(t, 5*time.Second, func() error { // the reader's end has no event
		if st := r.Stats(); st.ReaderBytes != 0 || st.ReaderPeers != 0 {
			return fmt.Errorf("readers still hold %d bytes of %d peers after the streams ended", st.ReaderBytes, st.ReaderPeers)
		}
		return nil
	})
}
