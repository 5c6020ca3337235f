package routing

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/troupe-mesh/troupe/codec"
)

// TestFragmentInterleavings: random mixes of small and large messages
// (at and around the thresholds) of several pairs, cut into random
// batches with the queue found empty at random points, arrive complete,
// intact and in per-pair order; each is counted once as sent and
// received, and those above the maximum frame are refused.
func TestFragmentInterleavings(t *testing.T) {
	const maxFrame = 300 << 10
	lb := newLoopback(t, maxFrame)
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	sizes := []int{40, 500, fragmentData - 1, fragmentData, fragmentData + 1, 2*fragmentData + 7, maxFrame, maxFrame + 1}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		var sent []outMsg
		refused := map[int]bool{}
		for i := range 10 + rng.IntN(40) {
			size := sizes[rng.IntN(len(sizes))]
			if rng.IntN(4) == 0 {
				size = 20 + rng.IntN(maxFrame)
			}
			if size > maxFrame {
				refused[i] = true
			}
			sent = append(sent, lb.msg(t, fmt.Sprint("s", rng.IntN(3)), fmt.Sprint("t", rng.IntN(3)), i, size))
		}
		before := lb.r.Stats()
		w := lb.writer()
		for rest := sent; len(rest) > 0; {
			n := 1 + rng.IntN(min(len(rest), 8))
			w.batch(t, rest[:n], rng.IntN(3) == 0)
			rest = rest[n:]
			if held := len(w.lg.held); held > maxHeld {
				t.Fatalf("seed %d: %d messages held", seed, held)
			}
		}
		if err := lb.read(w.finish(t)); err != nil {
			t.Fatalf("seed %d: reading: %v", seed, err)
		}
		checkOrder(t, sent, refused, lb.collect(t, len(sent)-len(refused)))
		after := lb.r.Stats()
		if want := uint64(len(sent) - len(refused)); w.sent != want || after.Received-before.Received != want {
			t.Fatalf("seed %d: %d sent and %d received, want %d", seed, w.sent, after.Received-before.Received, want)
		}
		if w.tooLarge != uint64(len(refused)) || len(w.failed) != len(refused) || w.encodeErrors != 0 || after.DecodeErrors != before.DecodeErrors {
			t.Fatalf("seed %d: %d refused as too large (%d failed), want %d; stats %+v", seed, w.tooLarge, len(w.failed), len(refused), after)
		}
		for _, f := range w.failed {
			if m := f.m.msg.(largeMsg); !refused[m.Seq] {
				t.Fatalf("seed %d: message %d refused", seed, m.Seq)
			}
		}
	}
}

// TestFragmentThresholds: a body of exactly fragmentData bytes goes whole,
// one byte more in two fragments; a body of exactly the maximum frame in
// fragments, one byte more is refused.
func TestFragmentThresholds(t *testing.T) {
	const maxFrame = 256 << 10
	lb := newLoopback(t, maxFrame)
	for _, c := range []struct {
		size, fragments int
		refused         bool
	}{
		{fragmentData, 0, false},
		{fragmentData + 1, 2, false},
		{maxFrame, (maxFrame + fragmentData - 1) / fragmentData, false},
		{maxFrame + 1, 0, true},
	} {
		w := lb.writer()
		e := lb.msg(t, "s0", "t0", 1, c.size)
		w.batch(t, []outMsg{e}, true)
		stream := w.finish(t)
		if n := fragmentsIn(t, stream); n != c.fragments {
			t.Errorf("%d bytes: %d fragments, want %d", c.size, n, c.fragments)
		}
		if err := lb.read(stream); err != nil {
			t.Fatal(err)
		}
		refused := map[int]bool{1: c.refused}
		n := 1
		if c.refused {
			n = 0
		}
		checkOrder(t, []outMsg{e}, refused, lb.collect(t, n))
		if (w.tooLarge == 1) != c.refused || len(w.failed) != int(w.tooLarge) || w.sent != uint64(n) {
			t.Errorf("%d bytes: %d refused, %d sent", c.size, w.tooLarge, w.sent)
		}
	}
}

// TestFragmentsUnderSmallMaxFrame: with a maximum frame just above
// fragmentData, a message that needs fragments still goes (its fragments
// are smaller): a fragment of fragmentData bytes would not fit a frame,
// and the writer broke the stream.
func TestFragmentsUnderSmallMaxFrame(t *testing.T) {
	const maxFrame = fragmentData + 16
	lb := newLoopback(t, maxFrame)
	w := lb.writer()
	sent := []outMsg{lb.msg(t, "s0", "t0", 1, fragmentData+8), lb.msg(t, "s0", "t0", 2, maxFrame)}
	w.batch(t, sent, true)
	if err := lb.read(w.finish(t)); err != nil {
		t.Fatal(err)
	}
	checkOrder(t, sent, nil, lb.collect(t, 2))
}

// TestHeldMessagesBounded: while a large message goes out, a sender keeps
// the queue busy with messages of the same pair. The writer holds at most
// maxHeld of them: then it finishes the large message, and everything
// arrives in order.
func TestHeldMessagesBounded(t *testing.T) {
	lb := newLoopback(t, 0)
	w := lb.writer()
	sent := []outMsg{lb.msg(t, "s0", "t0", 0, 1000<<10)}
	w.batch(t, sent, false)
	done := false
	for b := range 3 * maxHeld / 100 {
		batch := make([]outMsg, 100)
		for i := range batch {
			batch[i] = lb.msg(t, "s0", "t0", 1+b*100+i, 60)
		}
		sent = append(sent, batch...)
		w.batch(t, batch, false) // the queue never empties
		if len(w.lg.held) > maxHeld {
			t.Fatalf("%d messages held", len(w.lg.held))
		}
		done = done || !w.lg.active
	}
	if !done {
		t.Fatal("the large message never finished while the queue was busy")
	}
	if err := lb.read(w.finish(t)); err != nil {
		t.Fatal(err)
	}
	checkOrder(t, sent, nil, lb.collect(t, len(sent)))
}

// TestReaderBuffersWhatArrived: a first fragment that announces the
// maximum frame and brings a few bytes makes the reader hold about those
// bytes, not the maximum.
func TestReaderBuffersWhatArrived(t *testing.T) {
	lb := newLoopback(t, 0)
	in := inbound{r: lb.r, remote: lb.h.ID(), remoteStr: lb.h.ID().String(), out: lb.r.sys.NewInbound(), v11: true}
	defer in.out.Close()
	env := codec.Envelope{Kind: codec.KindSystem, To: "t0", FromName: "s0", Type: typeFragment}
	data := make([]byte, 100)
	if err := in.fragment(&env, fragmentBody{Type: "bytes", Total: uint64(lb.r.cfg.MaxFrame), Data: data}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := in.fragment(&env, fragmentBody{Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	if got := cap(in.large.buf); got > 2*len(in.large.buf) {
		t.Fatalf("%d bytes buffered for the %d received", got, len(in.large.buf))
	}
}
