package routing

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/codec"
)

// pacedStream is a stream whose every Read waits gap, then gives chunk
// bytes of data, or fails as a deadline passing when the gap would end
// past the read deadline; before each Read it calls during.
type pacedStream struct {
	network.Stream // nil: only Read and SetReadDeadline are used
	data           []byte
	chunk          int
	gap            time.Duration
	deadline       time.Time
	during         func()
	end            error // what a Read returns once data is out (nil: an error of its own)
}

func (s *pacedStream) SetReadDeadline(t time.Time) error { s.deadline = t; return nil }

func (s *pacedStream) Read(p []byte) (int, error) {
	if s.during != nil {
		s.during()
	}
	if !s.deadline.IsZero() && time.Now().Add(s.gap).After(s.deadline) {
		time.Sleep(time.Until(s.deadline))
		return 0, os.ErrDeadlineExceeded
	}
	time.Sleep(s.gap)
	if len(s.data) == 0 {
		return 0, cmp.Or(s.end, errors.New("end of test data"))
	}
	n := copy(p[:min(len(p), s.chunk)], s.data)
	s.data = s.data[n:]
	return n, nil
}

// guardOn returns a stall guard with tm on s and the frame reader that
// reads through it.
func guardOn(s *pacedStream, tm timings) (*stallGuard, *codec.FrameReader) {
	in := &inbound{r: &Router{cfg: config{timings: tm}}}
	g := &stallGuard{s: s, in: in}
	g.fr = codec.NewFrameReader(g, 1<<20)
	return g, g.fr
}

// TestEachFrameHasItsOwnClock: an honest stream of small frames on a
// link slower than its reader, each read ending inside a frame, is never
// too slow: each frame's time starts anew, however many follow one
// another without a read between them ending at a frame's end.
func TestEachFrameHasItsOwnClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		frame := append(binary.AppendUvarint(nil, 100), bytes.Repeat([]byte{1}, 100)...) // 101 bytes
		s := &pacedStream{data: bytes.Repeat(frame, 300), chunk: 100, gap: 200 * time.Millisecond}
		g, fr := guardOn(s, timings{stallTimeout: 3 * time.Second, wholeBase: time.Second, wholeRate: 1 << 20})
		for i := range 300 {
			if _, err := fr.Next(); err != nil {
				t.Fatalf("frame %d of 300 (%v of waits): %v (too slow: %v)", i, time.Duration(i)*200*time.Millisecond, err, g.tooSlow(err))
			}
		}
	})
}

// TestEachLargeMessageHasItsOwnClock: large messages one after another,
// each begun before the reader waits again, each have their own time.
func TestEachLargeMessageHasItsOwnClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		frame := append(binary.AppendUvarint(nil, 100), bytes.Repeat([]byte{1}, 100)...)
		s := &pacedStream{data: bytes.Repeat(frame, 100), chunk: len(frame), gap: 200 * time.Millisecond}
		g, fr := guardOn(s, timings{stallTimeout: 3 * time.Second, wholeBase: time.Second, wholeRate: 1 << 20})
		// A new large message of 1,000 bytes begins before each read (the
		// last ended within the frames read before it).
		s.during = func() { g.in.large = largeIn{active: true, total: 1000}; g.in.larges++ }
		for i := range 100 {
			if _, err := fr.Next(); err != nil {
				t.Fatalf("read %d of 100: %v (too slow: %v)", i, err, g.tooSlow(err))
			}
		}
	})
}

// TestInterleavedFramesEarnALargeMessageTime: a large message whose
// fragments share the stream with as many bytes of other frames takes up
// to twice its own time and is on time; one that takes longer still is
// too slow.
func TestInterleavedFramesEarnALargeMessageTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A message of 10,000 bytes at 10,000 B/s: 1 s + 1 s; its stream
		// brings 20,000 bytes, 100 a read every 12 ms: 2.4 s, on time.
		frame := append(binary.AppendUvarint(nil, 98), bytes.Repeat([]byte{1}, 98)...) // 100 bytes
		tm := timings{stallTimeout: 3 * time.Second, wholeBase: time.Second, wholeRate: 10_000}
		s := &pacedStream{data: bytes.Repeat(frame, 200), chunk: len(frame), gap: 12 * time.Millisecond}
		g, fr := guardOn(s, tm)
		g.in.large, g.in.larges = largeIn{active: true, total: 10_000}, 1
		for i := range 200 {
			if _, err := fr.Next(); err != nil {
				t.Fatalf("frame %d of 200: %v (too slow: %v)", i, err, g.tooSlow(err))
			}
		}
		// The credit is twice the message's size at most (1 s + 2 s):
		// 30,000 bytes, 100 every 12 ms, would take 3.6 s: too slow.
		s = &pacedStream{data: bytes.Repeat(frame, 300), chunk: len(frame), gap: 12 * time.Millisecond}
		g, fr = guardOn(s, tm)
		g.in.large, g.in.larges = largeIn{active: true, total: 10_000}, 1
		var err error
		for range 300 {
			if _, err = fr.Next(); err != nil {
				break
			}
		}
		if err == nil || !g.tooSlow(err) {
			t.Fatalf("a large message held open by other frames past twice its time: %v, want too slow", err)
		}
	})
}

// TestATimeoutBetweenFramesIsNotATrickle: a timeout of the stream (not
// of a deadline this reader set) that comes between frames, after a
// frame read under its whole deadline, is not counted as too slow.
func TestATimeoutBetweenFramesIsNotATrickle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		frame := append(binary.AppendUvarint(nil, 100), bytes.Repeat([]byte{1}, 100)...)
		s := &pacedStream{data: frame, chunk: 50, gap: 10 * time.Millisecond, end: os.ErrDeadlineExceeded}
		g, fr := guardOn(s, timings{stallTimeout: 3 * time.Second, wholeBase: time.Second, wholeRate: 1 << 20})
		if _, err := fr.Next(); err != nil {
			t.Fatal(err)
		}
		_, err := fr.Next()
		if !errors.Is(err, os.ErrDeadlineExceeded) || g.tooSlow(err) {
			t.Fatalf("a timeout between frames: %v, too slow %v; want a timeout, not too slow", err, g.tooSlow(err))
		}
	})
}
