package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"testing"
	"testing/iotest"
)

// frames encodes envs as a stream of frames.
func frames(tb testing.TB, envs ...*Envelope) []byte {
	tb.Helper()
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf, 0)
	for _, e := range envs {
		if err := fw.WriteEnvelope(e); err != nil {
			tb.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// rawFrame returns payload prefixed with its uvarint length.
func rawFrame(payload []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(payload))), payload...)
}

// testEnvelopes returns envelopes of varied sizes, some larger than the
// reader's initial buffer.
func testEnvelopes(tb testing.TB) []*Envelope {
	var envs []*Envelope
	for i, size := range []int{0, 1, 100, 1000, 40 << 10, 3, 300 << 10, 100} {
		body := append(appendHead(nil, majorBytes, uint64(size)), bytes.Repeat([]byte{byte(i)}, size)...)
		envs = append(envs, &Envelope{
			Kind: KindUser, To: fmt.Sprintf("actor-%d", i), FromPeer: testPeerID,
			FromName: "sender", Type: "blob", Body: body, Corr: uint64(i) << 20,
		})
	}
	envs = append(envs, chatEnvelope(tb, nil))
	return envs
}

func TestFrameRoundTrip(t *testing.T) {
	envs := testEnvelopes(t)
	stream := frames(t, envs...)
	readers := map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"data+EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			fr := NewFrameReader(mk(), 0)
			for i, want := range envs {
				var got Envelope
				if err := fr.ReadEnvelope(&got); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !reflect.DeepEqual(&got, want) {
					t.Fatalf("frame %d: got %+v, want %+v", i, got, want)
				}
				if n, want := fr.FrameLen(), len(frames(t, want)); n+uvarintLen(uint64(n)) != want {
					t.Fatalf("frame %d: FrameLen %d, frame of %d bytes with its length", i, n, want)
				}
			}
			var e Envelope
			for range 2 {
				if err := fr.ReadEnvelope(&e); err != io.EOF {
					t.Fatalf("after last frame: err = %v, want io.EOF", err)
				}
			}
			if fr.Err() != io.EOF {
				t.Errorf("Err() = %v, want io.EOF", fr.Err())
			}
		})
	}
}

// errAfter is a reader that fails with err once data is consumed.
type errAfter struct {
	data []byte
	err  error
}

func (r *errAfter) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestFrameReaderErrors(t *testing.T) {
	good := frames(t, chatEnvelope(t, nil))
	errBoom := errors.New("boom")
	tests := []struct {
		name   string
		stream []byte
		rerr   error // error after stream; io.EOF if nil
		max    int
		want   error
		broken bool // stream must be reset after this error
	}{
		{"empty frame", rawFrame(nil), nil, 0, ErrMalformed, false},
		{"garbage payload", rawFrame([]byte{0xff, 0x00}), nil, 0, ErrMalformed, false},
		{"unknown kind", rawFrame(cat(hx("86 09"), envTo, envFrom, envType, envBody, envCorr)), nil, 0, ErrUnknownKind, false},
		{"envelope with trailing data", rawFrame(cat(validEnvelope(), hx("00"))), nil, 0, ErrMalformed, false},
		{"frame too large", rawFrame(make([]byte, 101)), nil, 100, ErrFrameTooLarge, true},
		{"4 GiB length", binary.AppendUvarint(nil, 4<<30), nil, 0, ErrFrameTooLarge, true},
		{"max uint64 length", binary.AppendUvarint(nil, ^uint64(0)), nil, 0, ErrMalformed, true},
		{"non-minimal length", hx("8100"), nil, 0, ErrMalformed, true},
		{"overlong length", hx("808080808080808080 01"), nil, 0, ErrMalformed, true},
		{"EOF inside length", hx("80"), nil, 0, io.ErrUnexpectedEOF, true},
		{"EOF inside payload", good[:len(good)-1], nil, 0, io.ErrUnexpectedEOF, true},
		{"read error at boundary", nil, errBoom, 0, errBoom, true},
		{"read error inside payload", good[:10], errBoom, 0, errBoom, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rerr := tt.rerr
			if rerr == nil {
				rerr = io.EOF
			}
			fr := NewFrameReader(&errAfter{data: cat(tt.stream, good), err: rerr}, tt.max)
			if tt.broken {
				fr = NewFrameReader(&errAfter{data: tt.stream, err: rerr}, tt.max)
			}
			var e Envelope
			err := fr.ReadEnvelope(&e)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			t.Logf("%v", err)
			if tt.want == io.ErrUnexpectedEOF && !errors.Is(err, ErrMalformed) {
				t.Errorf("truncation error %v does not wrap ErrMalformed", err)
			}
			if envelope := !tt.broken && tt.want == ErrMalformed; errors.Is(err, ErrMalformedEnvelope) != envelope {
				t.Errorf("errors.Is(%v, ErrMalformedEnvelope) = %v, want %v", err, !envelope, envelope)
			}
			if !tt.broken {
				if fr.Err() != nil {
					t.Fatalf("Err() = %v after a frame-level error", fr.Err())
				}
				if err := fr.ReadEnvelope(&e); err != nil {
					t.Fatalf("next frame after a frame-level error: %v", err)
				}
				if e.To != "lobby" {
					t.Errorf("next frame decoded as %+v", e)
				}
				return
			}
			if fr.Err() != err {
				t.Fatalf("Err() = %v, want %v", fr.Err(), err)
			}
			if err2 := fr.ReadEnvelope(&e); err2 != err {
				t.Errorf("second read: err = %v, want the sticky %v", err2, err)
			}
		})
	}
}

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

func TestFrameReaderMaxFrameSettings(t *testing.T) {
	for in, want := range map[int]int{0: DefaultMaxFrame, -1: DefaultMaxFrame, 10: 10, MaxFrameLimit + 1: MaxFrameLimit} {
		if got := NewFrameReader(nil, in).max; got != want {
			t.Errorf("NewFrameReader(_, %d).max = %d, want %d", in, got, want)
		}
	}
}

func TestParseUvarint(t *testing.T) {
	tests := []struct {
		in   string
		v    uint64
		n    int
		note string
	}{
		{"", 0, 0, "empty"},
		{"00", 0, 1, "zero"},
		{"7f", 127, 1, ""},
		{"8001", 128, 2, ""},
		{"80", 0, 0, "prefix"},
		{"8000", 0, -1, "non-minimal"},
		{"ffffffffffffffff7f", 1<<63 - 1, 9, "largest"},
		{"ffffffffffffffffff", 0, -1, "too long"},
		{"ffffffffffffffffff01", 0, -1, "too long"},
	}
	for _, tt := range tests {
		v, n := parseUvarint(hx(tt.in))
		if v != tt.v || n != tt.n {
			t.Errorf("parseUvarint(%s) = %d, %d; want %d, %d (%s)", tt.in, v, n, tt.v, tt.n, tt.note)
		}
	}
}

// liarReader claims to have read more than it was given.
type liarReader struct{}

func (liarReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestFrameReaderRejectsInvalidReadCounts(t *testing.T) {
	fr := NewFrameReader(liarReader{}, 0)
	if _, err := fr.Next(); err == nil || fr.Err() == nil {
		t.Fatalf("Next() = %v with a reader that returns too large counts", err)
	}
}

// piecesReader returns its chunks one per Read.
type piecesReader struct{ chunks [][]byte }

func (c *piecesReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// TestFrameReaderBuffered: Buffered reports a whole next frame only, with
// one- and two-byte lengths, an empty frame included.
func TestFrameReaderBuffered(t *testing.T) {
	long := make([]byte, 200) // a two-byte length
	stream := []byte{3, 'a', 'b', 'c', 0, 2, 'x', 'y'}
	stream = binary.AppendUvarint(stream, uint64(len(long)))
	stream = append(stream, long...)
	// The reads: "abc", "", half of "xy"; the rest of "xy" and one byte of
	// long's length; the rest.
	chunks := [][]byte{stream[:7], stream[7:9], stream[9:]}
	fr := NewFrameReader(&piecesReader{chunks: chunks}, 0)
	want := func(step string, buffered bool) {
		t.Helper()
		if got := fr.Buffered(); got != buffered {
			t.Fatalf("%s: Buffered() = %v, want %v", step, got, buffered)
		}
	}
	want("before any read", false)
	for _, step := range []struct {
		frame    string
		buffered bool
		why      string
	}{
		{"abc", true, "an empty frame next"},
		{"", false, "half of a frame with a one-byte length"},
		{"xy", false, "one byte of a two-byte length"},
		{string(long), false, "end of stream"},
	} {
		if f, err := fr.Next(); err != nil || string(f) != step.frame {
			t.Fatalf("frame: %q, %v; want %q", f, err, step.frame)
		}
		want(step.why, step.buffered)
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// A valid envelope whose body does not decode is ErrMalformed but not
// ErrMalformedEnvelope, and the reader goes on; an envelope that is
// malformed is both.
func TestReadMessageTellsBodyFromEnvelope(t *testing.T) {
	r := newTestRegistry(t)
	truncated := chatEnvelope(t, nil)
	truncated.Type, truncated.Body = "test.Point", hx("a2 61 58 01")
	trailing := chatEnvelope(t, nil)
	trailing.Type, trailing.Body = "test.Point", hx("a0 00")
	stream := cat(frames(t, truncated, trailing), rawFrame(hx("a1 01 02")), frames(t, chatEnvelope(t, nil)))
	fr := NewFrameReader(bytes.NewReader(stream), 0)
	var e Envelope
	for i, wantEnvelope := range []bool{false, false, true} {
		_, err := fr.ReadMessage(r, &e)
		if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrMalformedEnvelope) != wantEnvelope {
			t.Fatalf("frame %d: err %v, want ErrMalformed, ErrMalformedEnvelope %v", i, err, wantEnvelope)
		}
	}
	if _, err := fr.ReadMessage(r, &e); err != nil || e.To != "lobby" {
		t.Fatalf("the frame after them: %+v, %v", e, err)
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
