package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
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
