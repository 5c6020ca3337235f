package routing

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/codec"
)

// trickleTimings: a frame or message of n bytes may take 300 ms + n/10
// ms of waiting; a single read may wait 3 s, far longer than any
// trickle's gap, so only the whole deadline can end the trickles below.
var trickleTimings = timings{stallTimeout: 3 * time.Second, wholeBase: 300 * time.Millisecond, wholeRate: 10_000}

// trickle writes one byte of b every gap until the stream is reset (true)
// or within gives up (false).
func trickle(t *testing.T, rf *rawFrames, b []byte, gap, within time.Duration) bool {
	t.Helper()
	reset := make(chan bool, 1)
	go func() { reset <- rf.reset() }()
	end := time.After(within)
	tick := time.NewTicker(gap)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case r := <-reset:
			return r
		case <-end:
			_ = rf.s.Reset()
			return false
		case <-tick.C:
			_, _ = rf.s.Write(b[i%len(b) : i%len(b)+1])
		}
	}
}

// A stream that trickles a frame, one byte every 50 ms (each read waits
// far less than the stall timeout), is reset once the frame's deadline
// (base + size / rate) passed, and counted as slow; so is a large message
// whose fragments, each a whole frame, come too slowly; what the reader
// held for it is released. A frame that keeps the rate goes through.
func TestTricklingStreamsAreReset(t *testing.T) {
	h, r, sys := testRouterTimed(t, trickleTimings)
	got := spawnSink(t, sys)
	before := r.Stats()

	// A 10,000-byte frame: 1.3 s allowed; at 20 bytes a second it would
	// take 500 s.
	rf := newRawFrames(t, h)
	frame := append(binary.AppendUvarint(nil, 10_000), bytes.Repeat([]byte{0x80}, 10_000)...)
	start := time.Now()
	if !trickle(t, rf, frame, 50*time.Millisecond, 10*time.Second) {
		t.Fatal("a trickled frame's stream was not reset within 5 s")
	}
	if el := time.Since(start); el < time.Second {
		t.Fatalf("reset after %v, before the frame's deadline of 1.3 s", el)
	}
	if st := r.Stats(); st.SlowStreams != before.SlowStreams+1 || st.StreamsReset != before.StreamsReset+1 {
		t.Fatalf("a trickled frame: slow %d, reset %d; want one more each", st.SlowStreams-before.SlowStreams, st.StreamsReset-before.StreamsReset)
	}

	// A large message of 20,000 bytes announced (2.3 s allowed), its
	// first fragment of 16,000 bytes at once (the reader reserves memory
	// for it), the rest in 10-byte fragments every 100 ms.
	reserved := func() (n int64) {
		_ = h.Network().ResourceManager().ViewProtocol(ProtoMsg, func(s network.ProtocolScope) error {
			n = s.Stat().Memory
			return nil
		})
		return n
	}
	large := newRawFrames(t, h)
	large.fragment(fragmentBody{Type: "bytes", Total: 20_000, Data: bytes.Repeat([]byte{1}, 16_000)})
	start = time.Now()
	done := make(chan bool, 1)
	go func() { done <- large.reset() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var wasReset, sawReserved bool
wait:
	for {
		select {
		case wasReset = <-done:
			break wait
		case <-tick.C:
			if time.Since(start) > 15*time.Second {
				break wait
			}
			_, fb, err := large.reg.Encode(fragmentBody{Data: bytes.Repeat([]byte{1}, 10)})
			if err != nil {
				t.Fatal(err)
			}
			_ = large.fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, To: "sink", FromName: "src", Type: typeFragment, Body: fb})
			_ = large.fw.Flush()
			if reserved() > 0 {
				sawReserved = true
			}
		}
	}
	if !wasReset {
		t.Fatal("a trickled large message's stream was not reset within 5 s")
	}
	if el := time.Since(start); el < 2*time.Second {
		t.Fatalf("reset after %v, before the message's deadline of 2.3 s", el)
	}
	if st := r.Stats(); st.SlowStreams != before.SlowStreams+2 {
		t.Fatalf("a trickled large message: slow %d, want 2", st.SlowStreams-before.SlowStreams)
	}
	if held := reserved(); !sawReserved || held != 0 {
		t.Fatalf("reserved during the trickle: %v; %d bytes still reserved after the reset, want 0", sawReserved, held)
	}

	// A frame that comes at the rate goes through: 4,000 bytes in
	// 400-byte pieces every 10 ms (40,000 B/s, allowed 0.7 s: room for
	// a loaded machine's late wake-ups).
	ok := newRawFrames(t, h)
	_, body, err := ok.reg.Encode(bytes.Repeat([]byte{7}, 4000))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fw := codec.NewFrameWriter(&buf, 0)
	if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "sink", FromName: "src", Type: "bytes", Body: body}); err != nil || fw.Flush() != nil {
		t.Fatal(err)
	}
	for b := buf.Bytes(); len(b) > 0; b = b[min(400, len(b)):] {
		if _, err := ok.s.Write(b[:min(400, len(b))]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // the pace of a slow but honest writer
	}
	select {
	case m := <-got:
		if b, isBytes := m.([]byte); !isBytes || len(b) != 4000 {
			t.Fatalf("got %T %v", m, m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a frame at the rate did not arrive")
	}
	if st := r.Stats(); st.SlowStreams != before.SlowStreams+2 {
		t.Fatal("a frame at the rate was counted slow")
	}
}
