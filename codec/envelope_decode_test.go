package codec

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hx decodes hex, ignoring spaces; it panics on bad test input.
func hx(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Pieces of a valid envelope: kind 1, to "a", from (no peer, "b"),
// type "t", body f6 (null), corr 0.
var (
	envKind = hx("01")
	envTo   = hx("61 61")
	envFrom = hx("82 40 61 62")
	envType = hx("61 74")
	envBody = hx("41 f6")
	envCorr = hx("00")
)

// validEnvelope returns the encoding of a small valid envelope.
func validEnvelope() []byte {
	return cat(hx("86"), envKind, envTo, envFrom, envType, envBody, envCorr)
}

func TestDecodeEnvelopeValidFixture(t *testing.T) {
	var e Envelope
	if err := DecodeEnvelope(validEnvelope(), &e); err != nil {
		t.Fatal(err)
	}
	if e.Kind != KindUser || e.To != "a" || e.FromName != "b" || e.Type != "t" || !bytes.Equal(e.Body, []byte{0xf6}) {
		t.Fatalf("decoded %+v", e)
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	deep := cat(bytes.Repeat([]byte{0x81}, 17), []byte{0x00})
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"not an array", hx("a0"), ErrMalformed},
		{"uint instead of array", hx("01"), ErrMalformed},
		{"indefinite array", cat(hx("9f"), envKind, envTo, envFrom, envType, envBody, envCorr, hx("ff")), ErrMalformed},
		{"too few fields", cat(hx("85"), envKind, envTo, envFrom, envType, envBody), ErrMalformed},
		{"too many fields", cat(hx("98 21"), envKind, envTo, envFrom, envType, envBody, envCorr, bytes.Repeat([]byte{0}, 27)), ErrMalformed},
		{"array count beyond data", hx("9b ffffffffffffffff"), ErrMalformed},
		{"kind is text", cat(hx("86 61 31"), envTo, envFrom, envType, envBody, envCorr), ErrMalformed},
		{"kind is negative", cat(hx("86 20"), envTo, envFrom, envType, envBody, envCorr), ErrMalformed},
		{"kind 0", cat(hx("86 00"), envTo, envFrom, envType, envBody, envCorr), ErrUnknownKind},
		{"kind 4", cat(hx("86 04"), envTo, envFrom, envType, envBody, envCorr), ErrUnknownKind},
		{"kind 300", cat(hx("86 19 012c"), envTo, envFrom, envType, envBody, envCorr), ErrUnknownKind},
		{"reserved additional info", cat(hx("86 1c"), envTo, envFrom, envType, envBody, envCorr), ErrMalformed},
		{"to is bytes", cat(hx("86"), envKind, hx("41 61"), envFrom, envType, envBody, envCorr), ErrMalformed},
		{"to indefinite", cat(hx("86"), envKind, hx("7f 61 61 ff"), envFrom, envType, envBody, envCorr), ErrMalformed},
		{"to too long", cat(hx("86"), envKind, hx("79 0401"), bytes.Repeat([]byte("a"), 1025), envFrom, envType, envBody, envCorr), ErrMalformed},
		{"to length beyond data", cat(hx("86"), envKind, hx("7a 7fffffff")), ErrMalformed},
		{"to invalid UTF-8", cat(hx("86"), envKind, hx("61 ff"), envFrom, envType, envBody, envCorr), ErrMalformed},
		{"from is not an array", cat(hx("86"), envKind, envTo, hx("61 62"), envType, envBody, envCorr), ErrMalformed},
		{"from has 3 fields", cat(hx("86"), envKind, envTo, hx("83 40 61 62 00"), envType, envBody, envCorr), ErrMalformed},
		{"from peer is text", cat(hx("86"), envKind, envTo, hx("82 60 61 62"), envType, envBody, envCorr), ErrMalformed},
		{"from peer too long", cat(hx("86"), envKind, envTo, hx("82 58 81"), make([]byte, 129), hx("61 62"), envType, envBody, envCorr), ErrMalformed},
		{"from name invalid UTF-8", cat(hx("86"), envKind, envTo, hx("82 40 62 c3 28"), envType, envBody, envCorr), ErrMalformed},
		{"type is uint", cat(hx("86"), envKind, envTo, envFrom, hx("05"), envBody, envCorr), ErrMalformed},
		{"type invalid UTF-8", cat(hx("86"), envKind, envTo, envFrom, hx("61 80"), envBody, envCorr), ErrMalformed},
		{"body is text", cat(hx("86"), envKind, envTo, envFrom, envType, hx("61 61"), envCorr), ErrMalformed},
		{"body is a bare item", cat(hx("86"), envKind, envTo, envFrom, envType, hx("f6"), envCorr), ErrMalformed},
		{"body truncated", cat(hx("86"), envKind, envTo, envFrom, envType, hx("45 01 02")), ErrMalformed},
		{"corr negative", cat(hx("86"), envKind, envTo, envFrom, envType, envBody, hx("20")), ErrMalformed},
		{"corr is float", cat(hx("86"), envKind, envTo, envFrom, envType, envBody, hx("f9 3c00")), ErrMalformed},
		{"corr missing", cat(hx("86"), envKind, envTo, envFrom, envType, envBody), ErrMalformed},
		{"trailing bytes", cat(validEnvelope(), hx("00")), ErrMalformed},
		{"extension truncated", cat(hx("87"), envKind, envTo, envFrom, envType, envBody, envCorr, hx("62 61")), ErrMalformed},
		{"extension is a break", cat(hx("87"), envKind, envTo, envFrom, envType, envBody, envCorr, hx("ff")), ErrMalformed},
		{"extension too deep", cat(hx("87"), envKind, envTo, envFrom, envType, envBody, envCorr, deep), ErrMalformed},
		{"extension invalid UTF-8", cat(hx("87"), envKind, envTo, envFrom, envType, envBody, envCorr, hx("61 ff")), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Envelope
			err := DecodeEnvelope(tt.data, &e)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if errors.Is(err, ErrMalformed) && errors.Is(err, ErrUnknownKind) {
				t.Errorf("err %v is both malformed and unknown kind", err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestDecodeEnvelopeUnknownKindKeepsFields(t *testing.T) {
	var e Envelope
	err := DecodeEnvelope(cat(hx("86 07"), envTo, envFrom, envType, envBody, envCorr), &e)
	if !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("err = %v, want ErrUnknownKind", err)
	}
	if e.Kind != 7 || e.To != "a" || e.FromName != "b" || e.Type != "t" {
		t.Errorf("envelope not decoded: %+v", e)
	}
}

func TestDecodeEnvelopeEveryTruncation(t *testing.T) {
	data, err := AppendEnvelope(nil, chatEnvelope(t, testPeerID))
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(data) {
		var e Envelope
		if err := DecodeEnvelope(data[:n], &e); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: err = %v, want ErrMalformed", n, err)
		}
	}
}

func TestDecodeEnvelopeSkipsExtensions(t *testing.T) {
	// A newer peer appended a map and a text field; this version keeps
	// the fields it knows.
	data := cat(hx("88"), envKind, envTo, envFrom, envType, envBody, hx("18 2a"),
		hx("a1 01 82 f5 f4"), hx("63 6e6577"))
	var e Envelope
	if err := DecodeEnvelope(data, &e); err != nil {
		t.Fatal(err)
	}
	if e.Corr != 42 || e.To != "a" || e.Type != "t" {
		t.Errorf("decoded %+v", e)
	}
}

func TestDecodeEnvelopeNonMinimalHeads(t *testing.T) {
	// Valid CBOR need not use the shortest heads; the decoder accepts any.
	data := cat(hx("86 18 01 78 01 61"), envFrom, hx("79 0001 74"), envBody, hx("1b 0000000000000000"))
	var e Envelope
	if err := DecodeEnvelope(data, &e); err != nil {
		t.Fatal(err)
	}
	if e.Kind != KindUser || e.To != "a" || e.Type != "t" {
		t.Errorf("decoded %+v", e)
	}
}

// A stream reader parses the small layout apart and remembers names: on
// every envelope one byte away from a valid one, its result must be
// DecodeEnvelope's, after another envelope and when repeated.
func TestStreamDecodingMatchesDecodeEnvelope(t *testing.T) {
	bigBody := append([]byte{0x59, 0x01, 0x00}, make([]byte, 256)...)
	bases := [][]byte{seedEnvelope, validEnvelope()}
	for _, e := range []*Envelope{
		chatEnvelope(t, testPeerID),
		{Kind: KindReply, To: "a-name-longer-than-24-bytes", FromName: "b", Type: "t", Body: bigBody[3:], Corr: 1 << 40},
		{Kind: KindSystem, Corr: 300},
	} {
		data, err := AppendEnvelope(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, data)
	}
	for _, base := range bases {
		var f envFields
		if !f.parseSmall(base) {
			t.Fatalf("% x: not parsed in the small layout", base)
		}
	}
	// A peer ID one byte over the limit, in the small layout otherwise.
	long, err := AppendEnvelope(nil, &Envelope{Kind: KindUser, FromPeer: make([]byte, MaxPeerIDLen)})
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(long, []byte{0x58, MaxPeerIDLen})
	long = slices.Concat(long[:i], []byte{0x58, MaxPeerIDLen + 1, 0}, long[i+2:])
	if err := DecodeEnvelope(long, new(Envelope)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("peer ID over the limit: %v", err)
	}
	bases = append(bases, long)
	for _, base := range bases {
		for i := range base {
			for v := range 256 {
				data := bytes.Clone(base)
				data[i] = byte(v)
				var want Envelope
				wantErr := DecodeEnvelope(data, &want)
				var c streamCache
				var prev Envelope
				if err := decodeEnvelope(seedEnvelope, &prev, &c); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					var got Envelope
					err := decodeEnvelope(data, &got, &c)
					if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
						t.Fatalf("% x: with a stream cache %+v, %v; without %+v, %v", data, got, err, want, wantErr)
					}
				}
			}
		}
	}
}
