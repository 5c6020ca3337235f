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

// A compact stream's reference decoder: frames as a plain FrameReader's
// Next splits them (framing does not change), full envelopes by
// DecodeEnvelope, short envelopes by a generic CBOR decoder, and the
// previous header as the package documentation defines it.

// refArrayLen returns the length given by a definite array head at the
// start of p.
func refArrayLen(p []byte) (uint64, bool) {
	if len(p) == 0 || p[0]>>5 != majorArray {
		return 0, false
	}
	ai := p[0] & 0x1f
	switch {
	case ai < 24:
		return uint64(ai), true
	case ai <= 27:
		n := 1 << (ai - 24)
		if len(p) < 1+n {
			return 0, false
		}
		var v uint64
		for _, b := range p[1 : 1+n] {
			v = v<<8 | uint64(b)
		}
		return v, true
	}
	return 0, false
}

// refShort decodes a short envelope with a generic CBOR decoder.
func refShort(p []byte) (body []byte, corr uint64, ok bool) {
	var items []cbor.RawMessage
	if err := cbor.Unmarshal(p, &items); err != nil || len(items) < 1 || len(items) > 2 {
		return nil, 0, false
	}
	if items[0][0]>>5 != majorBytes || items[0][0] == 0x5f || cbor.Unmarshal(items[0], &body) != nil {
		return nil, 0, false
	}
	if len(items) == 2 && (items[1][0]>>5 != majorUint || cbor.Unmarshal(items[1], &corr) != nil) {
		return nil, 0, false
	}
	if len(body) == 0 {
		body = nil
	}
	return body, corr, true
}

// compactResult is what decoding one frame of a compact stream produced:
// the envelope, and the class of the error.
type compactResult struct {
	env Envelope
	err string // "", "malformed", "unknown kind", or a stream error's text
}

func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrUnknownKind):
		return "unknown kind"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	}
	return err.Error()
}

// refCompact decodes data as a compact stream by the reference rules.
func refCompact(data []byte) []compactResult {
	fr := NewFrameReader(bytes.NewReader(data), fuzzMaxFrame)
	var out []compactResult
	var prev *compactResult // nil: no previous header
	for {
		p, err := fr.Next()
		if err != nil {
			if err == io.EOF || fr.Err() != nil {
				return append(out, compactResult{err: err.Error()})
			}
		}
		var r compactResult
		if n, isArray := refArrayLen(p); isArray && n < envelopeFields {
			body, corr, ok := refShort(p)
			switch {
			case !ok || prev == nil:
				r.err, prev = "malformed", nil
			default:
				r = *prev
				r.env.Body, r.env.Corr = body, corr
			}
		} else {
			err := DecodeEnvelope(p, &r.env)
			r.err = errClass(err)
			if r.err == "" || r.err == "unknown kind" {
				prev = &compactResult{env: r.env, err: r.err}
				prev.env.Body, prev.env.Corr = nil, 0
			} else {
				prev = nil
			}
		}
		out = append(out, r)
	}
}

// readCompact decodes r as a compact stream with ReadEnvelope.
func readCompact(t *testing.T, r io.Reader) []compactResult {
	fr := NewFrameReader(r, fuzzMaxFrame, WithCompact(true))
	var out []compactResult
	for {
		var e Envelope
		err := fr.ReadEnvelope(&e)
		if err != nil && fr.Err() != nil {
			if err != fr.Err() {
				t.Fatalf("ReadEnvelope returned %v but Err() is %v", err, fr.Err())
			}
			return append(out, compactResult{err: err.Error()})
		}
		if err != nil && errClass(err) == err.Error() {
			t.Fatalf("unclassified error: %v", err)
		}
		out = append(out, compactResult{env: e, err: errClass(err)})
	}
}

// checkCompactStream checks a compact FrameReader on data against the
// reference decoder, whole and in small reads, with ReadEnvelope and with
// ReadMessage.
func checkCompactStream(t *testing.T, reg *Registry, data []byte) {
	t.Helper()
	want := refCompact(data)
	for name, r := range map[string]io.Reader{"whole": bytes.NewReader(data), "split": &chunkReader{data: data}} {
		if got := readCompact(t, r); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: compact reader on % x:\n got %+v\nwant %+v", name, data, got, want)
		}
	}
	fr := NewFrameReader(bytes.NewReader(data), fuzzMaxFrame, WithCompact(true))
	for i, w := range want {
		var e Envelope
		v, err := fr.ReadMessage(reg, &e)
		if i == len(want)-1 {
			if err == nil || err.Error() != w.err {
				t.Fatalf("frame %d: ReadMessage at the end: %v, want %s", i, err, w.err)
			}
			return
		}
		we := w.env
		we.Body = nil
		if w.err != "" {
			if errClass(err) != w.err || !reflect.DeepEqual(e, we) {
				t.Fatalf("frame %d: ReadMessage: %+v, %v; want %+v, %s", i, e, err, we, w.err)
			}
			continue
		}
		wv, werr := reg.Decode(w.env.Type, w.env.Body)
		if !reflect.DeepEqual(e, we) || errClass(err) != errClass(werr) || (werr == nil && !equalValues(v, wv)) {
			t.Fatalf("frame %d: ReadMessage: %+v, %#v, %v; want %+v, %#v, %v", i, e, v, err, we, wv, werr)
		}
	}
}

// compactSeeds returns compact streams: runs of full and short frames.
func compactSeeds(tb testing.TB) map[string][]byte {
	runs := func(envs ...*Envelope) []byte {
		var buf bytes.Buffer
		fw := NewFrameWriter(&buf, 0, WithCompact(true))
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
	chat := chatEnvelope(tb, testPeerID)
	point := &Envelope{Kind: KindUser, To: "p", FromName: "q", Type: "test.Point", Body: hx("a2 61 58 01 61 59 02")}
	point2 := *point
	point2.Corr = 300
	point3 := point2
	point3.FromPeer = []byte{7}
	reply := &Envelope{Kind: KindReply, To: "p", Type: "test.Point", Body: hx("a0"), Corr: 1 << 33}
	short := rawFrame(hx("81 41 f6"))
	return map[string][]byte{
		"runs":                runs(chat, chat, point, point, reply, point, &point2, &point3, &point3),
		"small-runs":          runs(point, point, &point2, reply, reply, &point3, &point3),
		"short-first":         cat(short, rawFrame(validEnvelope()), short),
		"short-after-bad":     cat(rawFrame(validEnvelope()), rawFrame(hx("86 01")), short, rawFrame(validEnvelope()), short),
		"short-unknown-kind":  cat(rawFrame(cat(hx("86 18 ff"), envTo, envFrom, envType, envBody, envCorr)), short, rawFrame(hx("82 40 1b ffffffffffffffff"))),
		"short-nonminimal":    cat(rawFrame(validEnvelope()), rawFrame(hx("98 02 59 0001 f6 18 05")), rawFrame(hx("83 41 f6 00 00"))),
		"short-bad-then-good": cat(rawFrame(validEnvelope()), rawFrame(hx("82 41 f6 20")), short, rawFrame(hx("80")), rawFrame(hx("81 5f 41 f6 ff"))),
	}
}

// FuzzCompactStream fuzzes sequences of full and short frames on a compact
// stream against the reference decoder.
func FuzzCompactStream(f *testing.F) {
	for _, data := range compactSeeds(f) {
		f.Add(data)
	}
	reg := newTestRegistry(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCompactStream(t, reg, data)
	})
}
