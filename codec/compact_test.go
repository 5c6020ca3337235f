package codec

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// writeCompact encodes envs with a compact FrameWriter and returns the
// stream and each frame's size.
func writeCompact(tb testing.TB, envs ...*Envelope) ([]byte, []int) {
	tb.Helper()
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf, 0, WithCompact(true))
	var sizes []int
	for _, e := range envs {
		before := fw.Buffered()
		if err := fw.WriteEnvelope(e); err != nil {
			tb.Fatal(err)
		}
		sizes = append(sizes, fw.Buffered()-before)
	}
	if err := fw.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), sizes
}

func TestCompactRoundTrip(t *testing.T) {
	chat := chatEnvelope(t, nil)
	remote := chatEnvelope(t, testPeerID)
	withCorr := *chat
	withCorr.Corr = 1 << 40
	empty := *chat
	empty.Body = nil
	other := *chat
	other.To = "hall"
	reply := *chat
	reply.Kind = KindReply
	otherPeer := *remote
	otherPeer.FromPeer = bytes.Clone(testPeerID)
	otherPeer.FromPeer[37]++
	envs := []*Envelope{chat, chat, &withCorr, &empty, &other, &other, &reply, chat, remote, remote, &otherPeer, &otherPeer}
	// A short envelope is [body] or [body, corr]: one byte of array head,
	// the body's head and the body, the corr's head.
	wantShort := []bool{false, true, true, true, false, true, false, false, false, true, false, true}
	stream, sizes := writeCompact(t, envs...)
	for i, short := range wantShort {
		e := envs[i]
		var want int
		if short {
			want = 1 + 1 + headLen(uint64(len(e.Body))) + len(e.Body)
			if e.Corr != 0 {
				want += headLen(e.Corr)
			}
		} else {
			n, err := EnvelopeSize(e)
			if err != nil {
				t.Fatal(err)
			}
			want = uvarintLen(uint64(n)) + n
		}
		if sizes[i] != want {
			t.Errorf("frame %d: %d bytes, want %d (short %v)", i, sizes[i], want, short)
		}
	}
	// The chat message: 128 bytes + 2 of length as a full envelope, 103
	// + 1 as a short one.
	if sizes[0] != 130 || sizes[1] != 104 {
		t.Errorf("chat frame sizes %d, %d; want 130, 104", sizes[0], sizes[1])
	}
	for name, r := range map[string]io.Reader{"whole": bytes.NewReader(stream), "split": &chunkReader{data: stream}} {
		fr := NewFrameReader(r, 0, WithCompact(true))
		for i, want := range envs {
			var got Envelope
			if err := fr.ReadEnvelope(&got); err != nil {
				t.Fatalf("%s: frame %d: %v", name, i, err)
			}
			w := *want
			if len(w.Body) == 0 {
				w.Body = nil
			}
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("%s: frame %d: got %+v, want %+v", name, i, got, w)
			}
		}
		if err := fr.ReadEnvelope(new(Envelope)); err != io.EOF {
			t.Fatalf("%s: at the end: %v", name, err)
		}
	}
	checkCompactStream(t, newTestRegistry(t), stream)
}

// A reader of version 1.0.0 rejects each short envelope as malformed and
// stays in sync: the full envelopes around them still decode.
func TestShortEnvelopeIsMalformedOnPlainStream(t *testing.T) {
	chat := chatEnvelope(t, nil)
	other := *chat
	other.To = "hall"
	stream, _ := writeCompact(t, chat, chat, &other)
	fr := NewFrameReader(bytes.NewReader(stream), 0)
	var e Envelope
	if err := fr.ReadEnvelope(&e); err != nil || !reflect.DeepEqual(&e, chat) {
		t.Fatalf("first frame: %v, %+v", err, e)
	}
	err := fr.ReadEnvelope(&e)
	if !errors.Is(err, ErrMalformed) || fr.Err() != nil || !strings.Contains(err.Error(), "envelope has 1 fields, want 6..32") {
		t.Fatalf("short frame on a plain stream: %v (stream error %v)", err, fr.Err())
	}
	if !reflect.DeepEqual(e, Envelope{}) {
		t.Fatalf("envelope after the error: %+v", e)
	}
	if err := fr.ReadEnvelope(&e); err != nil || !reflect.DeepEqual(&e, &other) {
		t.Fatalf("third frame: %v, %+v", err, e)
	}
}

// A compact reader reads what a plain writer writes.
func TestCompactReaderReadsPlainStream(t *testing.T) {
	envs := testEnvelopes(t)
	fr := NewFrameReader(bytes.NewReader(frames(t, envs...)), 0, WithCompact(true))
	for i, want := range envs {
		var got Envelope
		if err := fr.ReadEnvelope(&got); err != nil || !reflect.DeepEqual(&got, want) {
			t.Fatalf("frame %d: %v, %+v", i, err, got)
		}
	}
}

func TestCompactReaderErrors(t *testing.T) {
	full := rawFrame(validEnvelope())
	short := rawFrame(hx("81 41 f6"))
	unknown := rawFrame(cat(hx("86 09"), envTo, envFrom, envType, envBody, envCorr))
	bad := rawFrame(hx("86 01"))
	type want struct {
		err  error  // nil, ErrMalformed or ErrUnknownKind
		text string // in the error
	}
	ok := want{}
	tests := []struct {
		name   string
		stream []byte
		want   []want
	}{
		{"short first", cat(short, full, short), []want{{ErrMalformed, "no previous header"}, ok, ok}},
		{"short after malformed full", cat(full, bad, short, full, short), []want{ok, {ErrMalformed, ""}, {ErrMalformed, "no previous header"}, ok, ok}},
		{"short after malformed short", cat(full, rawFrame(hx("81 01")), short), []want{ok, {ErrMalformed, "body: want byte string"}, {ErrMalformed, "no previous header"}}},
		{"short after unknown kind", cat(unknown, short, full, short), []want{{ErrUnknownKind, "9"}, {ErrUnknownKind, "9"}, ok, ok}},
		{"empty array", cat(full, rawFrame(hx("80")), full), []want{ok, {ErrMalformed, "0 fields, want 1 or 2 (short) or 6..32"}, ok}},
		{"three fields", cat(full, rawFrame(hx("83 41 f6 00 00"))), []want{ok, {ErrMalformed, "3 fields"}}},
		{"five fields", cat(full, rawFrame(hx("85 41 f6 00 00 00 00"))), []want{ok, {ErrMalformed, "5 fields"}}},
		{"indefinite array", cat(full, rawFrame(hx("9f 41 f6 ff"))), []want{ok, {ErrMalformed, "indefinite length"}}},
		{"body not bytes", cat(full, rawFrame(hx("81 61 61"))), []want{ok, {ErrMalformed, "body: want byte string"}}},
		{"indefinite body", cat(full, rawFrame(hx("81 5f 41 f6 ff"))), []want{ok, {ErrMalformed, "indefinite length"}}},
		{"body truncated", cat(full, rawFrame(hx("81 45 f6"))), []want{ok, {ErrMalformed, "truncated"}}},
		{"body head truncated", cat(full, rawFrame(hx("81 59 01"))), []want{ok, {ErrMalformed, "truncated head"}}},
		{"no body", cat(full, rawFrame(hx("81"))), []want{ok, {ErrMalformed, "truncated"}}},
		{"corr negative", cat(full, rawFrame(hx("82 41 f6 20"))), []want{ok, {ErrMalformed, "corr: want unsigned integer"}}},
		{"corr missing", cat(full, rawFrame(hx("82 41 f6"))), []want{ok, {ErrMalformed, "truncated"}}},
		{"corr indefinite", cat(full, rawFrame(hx("82 41 f6 1f"))), []want{ok, {ErrMalformed, "indefinite"}}},
		{"corr reserved", cat(full, rawFrame(hx("82 41 f6 1c"))), []want{ok, {ErrMalformed, "reserved"}}},
		{"trailing after body", cat(full, rawFrame(hx("81 41 f6 00"))), []want{ok, {ErrMalformed, "1 trailing bytes"}}},
		{"trailing after corr", cat(full, rawFrame(hx("82 41 f6 01 00"))), []want{ok, {ErrMalformed, "1 trailing bytes"}}},
		{"non-minimal heads", cat(full, rawFrame(hx("98 02 59 0001 f6 1b 0000000000000005"))), []want{ok, ok}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := NewFrameReader(bytes.NewReader(tt.stream), 0, WithCompact(true))
			for i, w := range tt.want {
				var e Envelope
				err := fr.ReadEnvelope(&e)
				if fr.Err() != nil {
					t.Fatalf("frame %d broke the stream: %v", i, fr.Err())
				}
				if w.err == nil {
					if err != nil || e.To != "a" || !bytes.Equal(e.Body, []byte{0xf6}) {
						t.Fatalf("frame %d: %v, %+v", i, err, e)
					}
					continue
				}
				if !errors.Is(err, w.err) || !strings.Contains(err.Error(), w.text) {
					t.Fatalf("frame %d: error %v, want %v containing %q", i, err, w.err, w.text)
				}
				if w.err == ErrMalformed && !reflect.DeepEqual(e, Envelope{}) {
					t.Fatalf("frame %d: envelope %+v after ErrMalformed", i, e)
				}
				if w.err == ErrUnknownKind && (e.Kind != 9 || e.To != "a" || e.FromName != "b" || e.Type != "t") {
					t.Fatalf("frame %d: envelope %+v after ErrUnknownKind", i, e)
				}
			}
			if err := fr.ReadEnvelope(new(Envelope)); err != io.EOF {
				t.Fatalf("at the end: %v", err)
			}
		})
	}
}

// A body that does not decode leaves the header in place: the short
// envelopes after it still decode.
func TestCompactBodyErrorKeepsHeader(t *testing.T) {
	reg := newTestRegistry(t)
	bad := &Envelope{Kind: KindUser, To: "p", Type: "test.Point", Body: hx("a1 61 58 61 61")} // X: "a"
	good := *bad
	good.Body = hx("a2 61 58 01 61 59 02")
	stream, sizes := writeCompact(t, bad, &good)
	if sizes[1] >= sizes[0] {
		t.Fatalf("second frame not short: sizes %v", sizes)
	}
	fr := NewFrameReader(bytes.NewReader(stream), 0, WithCompact(true))
	var e Envelope
	if _, err := fr.ReadMessage(reg, &e); !errors.Is(err, ErrMalformed) || fr.Err() != nil || e.Type != "test.Point" {
		t.Fatalf("bad body: %v, %+v", err, e)
	}
	v, err := fr.ReadMessage(reg, &e)
	if err != nil || v != (point{X: 1, Y: 2}) || e.To != "p" {
		t.Fatalf("short envelope after a bad body: %v, %#v, %+v", err, v, e)
	}
}

// Next does not decode, so a short envelope after it is malformed.
func TestCompactNextForgetsHeader(t *testing.T) {
	full := rawFrame(validEnvelope())
	short := rawFrame(hx("81 41 f6"))
	fr := NewFrameReader(bytes.NewReader(cat(full, short, short)), 0, WithCompact(true))
	var e Envelope
	if err := fr.ReadEnvelope(&e); err != nil {
		t.Fatal(err)
	}
	if p, err := fr.Next(); err != nil || !bytes.Equal(p, hx("81 41 f6")) {
		t.Fatalf("Next: % x, %v", p, err)
	}
	if err := fr.ReadEnvelope(&e); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short envelope after Next: %v", err)
	}
}

// Decoded short envelopes do not share memory with each other or with the
// reader's buffer.
func TestCompactShortEnvelopesDoNotAlias(t *testing.T) {
	e1 := &Envelope{Kind: KindUser, To: "a", FromPeer: testPeerID, Type: "t", Body: []byte{0x41, 1}}
	e2 := &Envelope{Kind: KindUser, To: "a", FromPeer: testPeerID, Type: "t", Body: []byte{0x41, 2}}
	stream, _ := writeCompact(t, e1, e2, e2)
	fr := NewFrameReader(bytes.NewReader(stream), 0, WithCompact(true))
	var got [3]Envelope
	for i := range got {
		if err := fr.ReadEnvelope(&got[i]); err != nil {
			t.Fatal(err)
		}
	}
	got[1].FromPeer[0]++
	got[1].Body[1]++
	if !bytes.Equal(got[0].FromPeer, testPeerID) || !bytes.Equal(got[2].FromPeer, testPeerID) || got[2].Body[1] != 2 {
		t.Fatalf("writing one envelope changed another: %+v", got)
	}
	if cap(got[1].FromPeer) != len(testPeerID) || cap(got[1].Body) != 2 {
		t.Fatal("capacities not clipped")
	}
}

func TestCompactWriter(t *testing.T) {
	chat := chatEnvelope(t, nil)
	t.Run("rejected envelope keeps the header", func(t *testing.T) {
		var buf bytes.Buffer
		fw := NewFrameWriter(&buf, 200, WithCompact(true))
		big := *chat
		big.To = "elsewhere"
		big.Body = make([]byte, 300)
		if err := fw.WriteEnvelope(chat); err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteEnvelope(&big); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("big envelope: %v", err)
		}
		before := fw.Buffered()
		if err := fw.WriteEnvelope(chat); err != nil || fw.Buffered()-before != 104 {
			t.Fatalf("after a rejected envelope: %v, %d bytes", err, fw.Buffered()-before)
		}
		short := *chat
		short.Body = make([]byte, 200)
		if err := fw.WriteEnvelope(&short); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("short envelope over the limit: %v", err)
		}
		bad := *chat
		bad.Kind = 0
		if err := fw.WriteEnvelope(&bad); !errors.Is(err, ErrUnknownKind) {
			t.Fatalf("invalid kind: %v", err)
		}
	})
	t.Run("WriteFrame forgets the header", func(t *testing.T) {
		var buf bytes.Buffer
		fw := NewFrameWriter(&buf, 0, WithCompact(true))
		if err := fw.WriteEnvelope(chat); err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteFrame(validEnvelope()); err != nil {
			t.Fatal(err)
		}
		before := fw.Buffered()
		if err := fw.WriteEnvelope(chat); err != nil || fw.Buffered()-before != 130 {
			t.Fatalf("after WriteFrame: %v, %d bytes, want a full frame", err, fw.Buffered()-before)
		}
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
		checkCompactStream(t, newTestRegistry(t), buf.Bytes())
	})
	t.Run("plain writer writes no short envelopes", func(t *testing.T) {
		if !bytes.Equal(frames(t, chat, chat), cat(frames(t, chat), frames(t, chat))) {
			t.Fatal("a plain writer compacted")
		}
	})
}

// Every one-byte change to a few compact streams decodes as the reference
// decoder says.
func TestCompactStreamMutations(t *testing.T) {
	reg := newTestRegistry(t)
	seeds := compactSeeds(t)
	for _, name := range []string{"small-runs", "short-after-bad", "short-unknown-kind"} {
		base := seeds[name]
		for i := range base {
			for v := range 256 {
				data := bytes.Clone(base)
				data[i] = byte(v)
				checkCompactStream(t, reg, data)
			}
		}
	}
}

// BenchmarkReadMessageCompact is BenchmarkReadMessage on a compact stream:
// every envelope but the first is short.
func BenchmarkReadMessageCompact(b *testing.B) {
	type blob struct{ Data []byte }
	r := newTestRegistry(b)
	MustRegister[blob](r, "bench.Blob")
	var stream []byte
	fw := NewFrameWriter(writerFunc(func(p []byte) (int, error) { stream = append(stream, p...); return len(p), nil }), 0, WithCompact(true))
	const frames = 10_000
	for i := range frames {
		_, body, err := r.Encode(blob{Data: make([]byte, 100+i%2)})
		if err != nil {
			b.Fatal(err)
		}
		if err := fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "sink", FromName: "source", Type: "bench.Blob", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(stream) / frames))
	b.ReportAllocs()
	var e Envelope
	var fr *FrameReader
	for i := 0; b.Loop(); i++ {
		if i%frames == 0 {
			fr = NewFrameReader(bytes.NewReader(stream), 0, WithCompact(true))
		}
		if _, err := fr.ReadMessage(r, &e); err != nil {
			b.Fatal(err)
		}
	}
}
