package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// The fuzz targets have a seed corpus in testdata/fuzz/<target>/, written by
// TestWriteFuzzCorpus, and run with:
//
//	go test ./codec -run '^$' -fuzz '^FuzzFrameReader$' -fuzztime 20s
//
// (or codec/fuzz.sh for all of them).

// fuzzMaxFrame keeps the fuzzed readers' buffers small.
const fuzzMaxFrame = 1 << 16

// checkInputError fails unless err is one of the errors bad input may cause.
func checkInputError(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("unclassified error: %v", err)
	}
}

// checkReencode fails unless e encodes and decodes back to itself.
func checkReencode(t *testing.T, e *Envelope) []byte {
	t.Helper()
	data, err := AppendEnvelope(nil, e)
	if err != nil {
		t.Fatalf("decoded envelope does not encode: %v (%+v)", err, e)
	}
	var back Envelope
	if err := DecodeEnvelope(data, &back); err != nil {
		t.Fatalf("re-encoded envelope does not decode: %v", err)
	}
	if !reflect.DeepEqual(&back, e) {
		t.Fatalf("re-encoding changed the envelope:\n got %+v\nwant %+v", back, *e)
	}
	return data
}

// frameResult is what reading one frame produced.
type frameResult struct {
	env Envelope
	err string
}

// readAll reads envelopes from r until the stream breaks.
func readAll(t *testing.T, r io.Reader) []frameResult {
	t.Helper()
	fr := NewFrameReader(r, fuzzMaxFrame)
	var out []frameResult
	for {
		var e Envelope
		err := fr.ReadEnvelope(&e)
		if err == nil {
			checkReencode(t, &e)
			out = append(out, frameResult{env: e})
			continue
		}
		if fr.Err() == nil {
			checkInputError(t, err)
			if errors.Is(err, ErrUnknownKind) {
				out = append(out, frameResult{env: e, err: err.Error()})
			} else {
				out = append(out, frameResult{err: err.Error()})
			}
			continue
		}
		if err != fr.Err() {
			t.Fatalf("ReadEnvelope returned %v but Err() is %v", err, fr.Err())
		}
		if err != io.EOF {
			checkInputError(t, err)
		}
		out = append(out, frameResult{err: err.Error()})
		return out
	}
}

// chunkReader returns data in reads of 1, 2, 3, 5, 8 and 13 bytes in turn,
// so that frames and length prefixes are split at many points.
type chunkReader struct {
	data []byte
	i    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	sizes := [...]int{1, 2, 3, 5, 8, 13}
	n := copy(p[:min(len(p), sizes[r.i%len(sizes)])], r.data)
	r.i++
	r.data = r.data[n:]
	return n, nil
}

func FuzzFrameReader(f *testing.F) {
	good := frames(f, chatEnvelope(f, testPeerID), &Envelope{Kind: KindSystem, To: "x", Corr: 7})
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(rawFrame(validEnvelope()))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x10})
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := readAll(t, bytes.NewReader(data))
		// How the stream is cut into reads must not change the result.
		split := readAll(t, &chunkReader{data: data})
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("results depend on read sizes:\n whole %+v\n split %+v", whole, split)
		}
	})
}

// seedEnvelope is an envelope whose names FuzzDecodeEnvelope puts in a
// stream cache before decoding the input with it.
var seedEnvelope = func() []byte {
	b, err := AppendEnvelope(nil, &Envelope{Kind: KindUser, To: "lobby", FromName: "alice", Type: "chat.Say", Body: []byte{0xa0}})
	if err != nil {
		panic(err)
	}
	return b
}()

func FuzzDecodeEnvelope(f *testing.F) {
	for _, e := range []*Envelope{chatEnvelope(f, testPeerID), {Kind: KindSystem}} {
		data, err := AppendEnvelope(nil, e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(validEnvelope())
	f.Add(seedEnvelope)
	f.Add(cat(hx("88"), envKind, envTo, envFrom, envType, envBody, envCorr, hx("a1 01 82 f5 f4 63 6e6577")))
	reg := newTestRegistry(f)
	generic, err := cbor.DecOptions{MaxNestedLevels: 64}.DecMode()
	if err != nil {
		f.Fatal(err)
	}
	lim := DefaultLimits()
	f.Fuzz(func(t *testing.T, data []byte) {
		// The body checker accepts only what a reference decoder deems
		// well formed.
		if checkWellFormed(data, &lim) == nil {
			if err := generic.Wellformed(data); err != nil {
				t.Fatalf("checkWellFormed accepted what cbor rejects: %v", err)
			}
		}
		var e Envelope
		err := DecodeEnvelope(data, &e)
		// A stream reader's decoding (small layouts parsed apart, names
		// remembered from the previous envelope) gives the same result,
		// after another envelope and repeated.
		var c streamCache
		var prev Envelope
		if err := decodeEnvelope(seedEnvelope, &prev, &c); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			var ec Envelope
			errc := decodeEnvelope(data, &ec, &c)
			if fmt.Sprint(errc) != fmt.Sprint(err) || !reflect.DeepEqual(ec, e) {
				t.Fatalf("with a stream cache: %+v, %v; without: %+v, %v", ec, errc, e, err)
			}
		}
		if err != nil {
			checkInputError(t, err)
			if !errors.Is(err, ErrUnknownKind) {
				return
			}
		}
		if err := generic.Wellformed(data); err != nil {
			t.Fatalf("DecodeEnvelope accepted invalid CBOR: %v", err)
		}
		if !errors.Is(err, ErrUnknownKind) {
			if out := checkReencode(t, &e); len(out) > len(data) {
				t.Fatalf("re-encoding grew from %d to %d bytes", len(data), len(out))
			}
		}
		// Whatever the body holds, decoding it fails cleanly or yields a
		// value that encodes again.
		v, err := reg.Decode(e.Type, e.Body)
		if err != nil {
			checkInputError(t, err)
			return
		}
		if _, _, err := reg.Encode(v); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("decoded %T does not encode: %v", v, err)
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(1), "lobby", []byte{}, "alice", "chat.Say", []byte{0xf6}, uint64(0), "hi", int64(0))
	f.Add(uint8(2), "", testPeerID, "", "troupe.Down", chatBody(f), uint64(1<<63), "", int64(-1))
	f.Add(uint8(0), "a\xffb", []byte{1}, "名前", "t", []byte{}, uint64(42), "\xc3", int64(1e18))
	reg := newTestRegistry(f)
	fast := newFastRegistry(f)
	f.Fuzz(func(t *testing.T, kind uint8, to string, peer []byte, name, typ string, body []byte, corr uint64, text string, n int64) {
		for _, m := range []any{
			chatSay{Room: to, Text: text},
			fastAll{B: n&1 == 1, I: int(n), I8: int8(n), I16: int16(n >> 8), I32: int32(n >> 16), I64: n,
				U: uint(corr), U8: uint8(corr), U16: uint16(corr >> 8), U32: uint32(corr >> 16), U64: corr, S: name, D: body},
			fastTagged{ID: corr, Text: typ, Linked: n < 0, Neg: int32(n)},
			fastBlob{Data: peer},
		} {
			checkBodySize(t, fast, m)
		}

		e := Envelope{Kind: Kind(kind), To: to, FromName: name, Type: typ, Corr: corr}
		if len(peer) > 0 {
			e.FromPeer = peer
		}
		if len(body) > 0 {
			e.Body = body
		}
		data, err := AppendEnvelope(nil, &e)
		valid := e.Kind.Valid() && len(peer) <= MaxPeerIDLen &&
			len(to) <= MaxNameLen && len(name) <= MaxNameLen && len(typ) <= MaxNameLen &&
			utf8.ValidString(to) && utf8.ValidString(name) && utf8.ValidString(typ)
		if (err == nil) != valid {
			t.Fatalf("AppendEnvelope error %v for an envelope valid=%v", err, valid)
		}
		if err != nil {
			checkInputError(t, err)
			return
		}
		var back Envelope
		if err := DecodeEnvelope(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("envelope round trip:\n got %+v\nwant %+v", back, e)
		}
		// Through frames as well.
		var stream bytes.Buffer
		fw := NewFrameWriter(&stream, 0)
		if err := fw.WriteEnvelope(&e); err != nil {
			t.Fatal(err)
		}
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := NewFrameReader(&stream, 0).ReadEnvelope(&back); err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("frame round trip: %v, %+v", err, back)
		}
		// Through compact frames: the second and third envelopes are short.
		e2 := e
		e2.Corr, e2.Body = corr^1, nil
		fw = NewFrameWriter(&stream, 0, WithCompact(true))
		fr := NewFrameReader(&stream, 0, WithCompact(true))
		for i, want := range []*Envelope{&e, &e2, &e} {
			if err := fw.WriteEnvelope(want); err != nil {
				t.Fatal(err)
			}
			if i > 0 && fw.Buffered() != shortSize(want.Body, want.Corr)+uvarintLen(uint64(shortSize(want.Body, want.Corr))) {
				t.Fatalf("compact frame %d is not short: %d bytes", i, fw.Buffered())
			}
			if err := fw.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := fr.ReadEnvelope(&back); err != nil || !reflect.DeepEqual(&back, want) {
				t.Fatalf("compact frame %d round trip: %v, %+v", i, err, back)
			}
		}

		// Message bodies built from the same inputs.
		at := time.Unix(0, n).In(time.FixedZone("", int(n%50000)))
		msgs := []any{
			shape{Name: to, Points: []point{{int(n), -int(n)}}, Tags: map[string]int{name: int(corr % 1000)}},
			stamped{At: at, Data: peer},
			bigNums{U: corr, I: n, F: float64(n) / 3},
			withRef{Owner: Ref{Peer: peer, Name: name}},
			Ref{Peer: body, Name: typ},
			text,
		}
		textOK := utf8.ValidString(to) && utf8.ValidString(name) && utf8.ValidString(typ) && utf8.ValidString(text)
		for _, m := range msgs {
			tn, b, err := reg.Encode(m)
			if err != nil {
				if textOK || !errors.Is(err, ErrMalformed) {
					t.Fatalf("Encode(%T): %v", m, err)
				}
				continue
			}
			got, err := reg.Decode(tn, b)
			if err != nil {
				t.Fatalf("Decode(%q): %v", tn, err)
			}
			if !equalValues(got, m) && !equalValues(normalize(got), normalize(m)) {
				t.Fatalf("round trip of %T:\n got %#v\nwant %#v", m, got, m)
			}
		}
	})
}

// normalize maps empty byte slices to nil, which CBOR does not distinguish
// after a round trip through a nil-as-null encoder.
func normalize(v any) any {
	switch v := v.(type) {
	case stamped:
		if len(v.Data) == 0 {
			v.Data = nil
		}
		return v
	case withRef:
		if len(v.Owner.Peer) == 0 {
			v.Owner.Peer = nil
		}
		return v
	case Ref:
		if len(v.Peer) == 0 {
			v.Peer = nil
		}
		return v
	}
	return v
}
