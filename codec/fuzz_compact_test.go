package codec

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// Fuzzing compact streams against a reference decoder of short envelopes.

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
