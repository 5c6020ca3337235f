package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
)

// A FrameReader's buffer: allocation on huge lengths, growth, reuse,
// shrinking, and what it charges to its budget.

// endlessReader counts the bytes it hands out: a claimed length followed by
// zeros forever.
type endlessReader struct {
	prefix []byte
	read   int
}

func (r *endlessReader) Read(p []byte) (int, error) {
	n := copy(p, r.prefix)
	r.prefix = r.prefix[n:]
	clear(p[n:])
	r.read += len(p)
	return len(p), nil
}

// allocated returns the bytes allocated while running f.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestFrameReaderHugeLengthAllocatesNothing(t *testing.T) {
	for _, claim := range []uint64{4 << 30, DefaultMaxFrame + 1, 1 << 62} {
		r := &endlessReader{prefix: binary.AppendUvarint(nil, claim)}
		fr := NewFrameReader(r, 0)
		var err error
		n := allocated(func() { _, err = fr.Next() })
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("claim %d: err = %v, want ErrFrameTooLarge", claim, err)
		}
		if r.read > initialReadBuffer {
			t.Errorf("claim %d: read %d bytes, want at most one buffer (%d)", claim, r.read, initialReadBuffer)
		}
		if n > 2*initialReadBuffer {
			t.Errorf("claim %d: allocated %d bytes, want at most %d", claim, n, 2*initialReadBuffer)
		}
	}
}

func TestFrameReaderGrowsWithData(t *testing.T) {
	// A frame that claims the maximum but delivers only sent bytes: the
	// buffer stays within twice what arrived.
	for _, sent := range []int{10, 40 << 10, 300 << 10} {
		prefix := binary.AppendUvarint(nil, DefaultMaxFrame)
		data := append(prefix, make([]byte, sent)...)
		fr := NewFrameReader(bytes.NewReader(data), 0)
		var err error
		n := allocated(func() { _, err = fr.Next() })
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("sent %d: err = %v, want truncation", sent, err)
		}
		limit := uint64(max(2*len(data), initialReadBuffer)) * 2
		if n > limit {
			t.Errorf("sent %d: allocated %d bytes, want at most %d", sent, n, limit)
		}
		if len(fr.buf) > max(2*len(data), initialReadBuffer) {
			t.Errorf("sent %d: buffer grew to %d", sent, len(fr.buf))
		}
	}
}

// repeatReader serves the same bytes forever.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func TestFrameReaderReusesBuffer(t *testing.T) {
	fr := NewFrameReader(&repeatReader{data: frames(t, chatEnvelope(t, testPeerID))}, 0)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(10000, func() {
		if _, err := fr.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Next: %v allocations per frame, want 0", allocs)
	}
}

func TestFrameReaderShrinksAfterLargeFrame(t *testing.T) {
	big := &Envelope{Kind: KindUser, Body: append(hx("5a 00100000"), make([]byte, 1<<20)...)}
	fr := NewFrameReader(bytes.NewReader(frames(t, big, chatEnvelope(t, nil))), 0)
	var e Envelope
	if err := fr.ReadEnvelope(&e); err != nil {
		t.Fatal(err)
	}
	if len(fr.buf) < 1<<20 {
		t.Fatalf("buffer is %d bytes after a 1 MiB frame", len(fr.buf))
	}
	if err := fr.ReadEnvelope(&e); err != nil {
		t.Fatal(err)
	}
	if len(fr.buf) > initialReadBuffer {
		t.Errorf("buffer still %d bytes after the large frame was consumed", len(fr.buf))
	}
}

// testBudget is a Budget of limit bytes that records what is held.
type testBudget struct {
	limit, held, peak int
}

var errBudgetSpent = errors.New("budget spent")

func (b *testBudget) Reserve(n int) error {
	if n <= 0 {
		return fmt.Errorf("reserve %d bytes", n)
	}
	if b.held+n > b.limit {
		return errBudgetSpent
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return nil
}

func (b *testBudget) Release(n int) {
	if n <= 0 || n > b.held {
		panic(fmt.Sprintf("release %d bytes of %d held", n, b.held))
	}
	b.held -= n
}

func TestFrameReaderChargesItsBudget(t *testing.T) {
	big := &Envelope{Kind: KindUser, Body: append(hx("5a 00100000"), make([]byte, 1<<20)...)}
	small := chatEnvelope(t, nil)
	stream := frames(t, small, big, small, big, small)

	b := &testBudget{limit: 2 << 20}
	fr := NewFrameReader(bytes.NewReader(stream), 0, WithBudget(b))
	var e Envelope
	for i := range 5 {
		if err := fr.ReadEnvelope(&e); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if want := max(0, len(fr.buf)-initialReadBuffer); b.held != want {
			t.Errorf("frame %d: %d bytes held for a %d-byte buffer, want %d", i, b.held, len(fr.buf), want)
		}
	}
	if b.peak < 1<<20-initialReadBuffer {
		t.Errorf("peak %d bytes reserved for a 1 MiB frame", b.peak)
	}
	if b.held != 0 {
		t.Errorf("%d bytes still reserved after the large frames were consumed", b.held)
	}

	// A budget too small for the large frame breaks the stream before the
	// buffer grows past it.
	b = &testBudget{limit: 512 << 10}
	fr = NewFrameReader(bytes.NewReader(stream), 0, WithBudget(b))
	if err := fr.ReadEnvelope(&e); err != nil {
		t.Fatal(err)
	}
	err := fr.ReadEnvelope(&e)
	if !errors.Is(err, ErrBufferRefused) || !errors.Is(err, errBudgetSpent) {
		t.Fatalf("large frame over budget: err = %v, want ErrBufferRefused wrapping the budget's error", err)
	}
	if fr.Err() == nil || !errors.Is(fr.ReadEnvelope(&e), ErrBufferRefused) {
		t.Errorf("the stream is not broken after a refused buffer: Err() = %v", fr.Err())
	}
	if len(fr.buf)-initialReadBuffer > b.limit || b.held != len(fr.buf)-initialReadBuffer {
		t.Errorf("buffer %d bytes with %d reserved of %d", len(fr.buf), b.held, b.limit)
	}
}

// pieces is a reader that gives its slices one per Read, then EOF, and
// calls during before each Read.
type pieces struct {
	p      [][]byte
	during func()
}

func (r *pieces) Read(b []byte) (int, error) {
	r.during()
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.p[0])
	r.p = r.p[1:]
	return n, nil
}

// TestPendingSizeIsTheAnnouncedFrame: as its underlying reader sees it,
// a reader in the middle of a frame of 300 bytes reports 302 (prefix
// included) once the prefix is in, and 0 before and between frames.
func TestPendingSizeIsTheAnnouncedFrame(t *testing.T) {
	frame := append(binary.AppendUvarint(nil, 300), make([]byte, 300)...)
	var fr *FrameReader
	var seen []int
	r := &pieces{p: [][]byte{frame[:1], frame[1:100], frame[100:]}, during: func() { seen = append(seen, fr.PendingSize()) }}
	fr = NewFrameReader(r, 1<<20)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{0, 0, 302}) {
		t.Fatalf("PendingSize before each read: %v, want [0 0 302]", seen)
	}
	if fr.PendingSize() != 0 {
		t.Fatalf("between frames: %d", fr.PendingSize())
	}
}
