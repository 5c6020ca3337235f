package codec

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Types of the fast-path tests.
type (
	fastAll struct {
		B   bool
		I   int
		I8  int8
		I16 int16
		I32 int32
		I64 int64
		U   uint
		U8  uint8
		U16 uint16
		U32 uint32
		U64 uint64
		S   string
		D   []byte
	}
	fastTagged struct {
		ID     uint64 `cbor:"1,keyasint"`
		Text   string `cbor:"2,keyasint,omitempty"`
		Linked bool   `cbor:"3,keyasint,omitempty"`
		Neg    int32  `cbor:"-4,keyasint,omitempty"`
	}
	fastRenamed struct {
		A      int    `cbor:"alpha"`
		B      string `cbor:",omitempty"`
		Skip   int    `cbor:"-"`
		hidden int
	}
	fastBlob    struct{ Data []byte }
	fastNamed   int
	fastWithNam struct{ N fastNamed }
	// Types that must take the general path.
	slowJSON struct {
		A int `json:"a"`
	}
	slowEmbed     struct{ fastBlob }
	slowTime      struct{ At time.Time }
	slowFloat     struct{ F float64 }
	slowNested    struct{ P point }
	slowArray     struct{ A [4]byte }
	slowMarshaler struct{ V textish }
	textish       int
)

func (textish) MarshalText() ([]byte, error) { return []byte("t"), nil }

func newFastRegistry(tb testing.TB) *Registry {
	tb.Helper()
	r := newTestRegistry(tb)
	MustRegister[chatSay](r, "chat.Say")
	MustRegister[fastAll](r, "fast.All")
	MustRegister[fastTagged](r, "fast.Tagged")
	MustRegister[fastRenamed](r, "fast.Renamed")
	MustRegister[fastBlob](r, "fast.Blob")
	MustRegister[fastWithNam](r, "fast.WithNamed")
	MustRegister[slowJSON](r, "slow.JSON")
	MustRegister[slowEmbed](r, "slow.Embed")
	MustRegister[slowTime](r, "slow.Time")
	MustRegister[slowFloat](r, "slow.Float")
	MustRegister[slowNested](r, "slow.Nested")
	MustRegister[slowArray](r, "slow.Array")
	MustRegister[slowMarshaler](r, "slow.Marshaler")
	MustRegister[slowPtrShaped](r, "slow.PtrShaped")
	MustRegister[slowMapShaped](r, "slow.MapShaped")
	return r
}

// Pointer-shaped structs (one unexported pointer-like field, nothing for
// CBOR to carry) are stored in interfaces directly, so the fast path's
// boxing does not apply to them.
type (
	slowPtrShaped struct{ p *int }
	slowMapShaped struct{ m map[string]int }
)

// The fields are never set: only their shape matters.
var _ = slowPtrShaped{p: nil}.p
var _ = slowMapShaped{m: nil}.m

// TestPointerShapedDecodesLikeTheLibrary: through a stream (the fast path's
// boxing), a pointer-shaped struct decodes to its zero value, as the
// library decodes it.
func TestPointerShapedDecodesLikeTheLibrary(t *testing.T) {
	r := newFastRegistry(t)
	var stream bytes.Buffer
	fw := NewFrameWriter(&stream, 0)
	for _, v := range []any{slowPtrShaped{}, slowMapShaped{}} {
		typ, body, err := r.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "a", Type: typ, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	fr := NewFrameReader(&stream, 0)
	var e Envelope
	for _, want := range []any{slowPtrShaped{}, slowMapShaped{}} {
		got, err := fr.ReadMessage(r, &e)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%T decoded as %#v", want, got)
		}
	}
}

// fastValues are values of fast-path types, with edge cases.
func fastValues() []any {
	return []any{
		chatSay{Room: "lobby", Text: "hello"},
		chatSay{},
		fastAll{},
		fastAll{B: true, I: -1 << 63, I8: -128, I16: 32767, I32: -1 << 31, I64: 1<<63 - 1,
			U: 1<<64 - 1, U8: 255, U16: 65535, U32: 1<<32 - 1, U64: 24, S: "naïve ✓", D: []byte{}},
		fastAll{I: 23, I8: 24, I16: -24, I32: -25, U16: 256, D: bytes.Repeat([]byte{7}, 300)},
		fastTagged{ID: 9}, fastTagged{ID: 1 << 40, Text: "x", Linked: true, Neg: -7},
		fastRenamed{A: -5, B: "b", Skip: 3, hidden: 4},
		fastBlob{Data: bytes.Repeat([]byte{1}, 100)}, fastBlob{},
		fastWithNam{N: -300},
		point{X: 1, Y: -1}, empty{},
	}
}

func TestFastPathMatchesLibrary(t *testing.T) {
	r := newFastRegistry(t)
	for _, v := range fastValues() {
		name, body, err := r.Encode(v)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", v, err)
		}
		want, err := r.enc.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want) {
			t.Errorf("Encode(%#v) = %x, library %x", v, body, want)
		}
		got, err := r.Decode(name, body)
		if err != nil {
			t.Fatalf("Decode(%T): %v", v, err)
		}
		lib, err := r.tab.Load().byName[name].decode(r.dec, body)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, lib) {
			t.Errorf("Decode(%x) = %#v, library %#v", body, got, lib)
		}
	}
}

// checkBodySize fails t unless r.BodySize(v) agrees with AppendEncode: the
// same name and length when it knows them, and knowing them for every
// value of a fast-path type that encodes.
func checkBodySize(t *testing.T, r *Registry, v any) {
	t.Helper()
	name, n, ok := r.BodySize(v)
	wantName, body, err := r.AppendEncode(nil, v)
	switch {
	case ok && (err != nil || name != wantName || n != len(body)):
		t.Fatalf("BodySize(%#v) = %q, %d; AppendEncode = %q, %d bytes, %v", v, name, n, wantName, len(body), err)
	case !ok && err == nil && r.encEntry(v) != nil && r.encEntry(v).fast != nil:
		t.Fatalf("BodySize(%#v) does not know the size of a fast-path value", v)
	}
}

func TestBodySize(t *testing.T) {
	r := newFastRegistry(t)
	for _, v := range fastValues() {
		checkBodySize(t, r, v)
		if _, _, ok := r.BodySize(v); !ok && r.encEntry(v).fast != nil {
			t.Errorf("BodySize(%#v) not known", v)
		}
	}
	small := newTestRegistry(t, WithLimits(Limits{MaxDepth: 8, MaxArrayElements: 16, MaxMapPairs: 16, MaxStringLen: 40})) // the probes' strings fit: a fast path
	MustRegister[fastBlob](small, "fast.Blob")
	MustRegister[chatSay](small, "chat.Say")
	for _, tc := range []struct {
		r *Registry
		v any
	}{
		{r, chatSay{Text: "a\xffb"}},              // the general path's error
		{small, fastBlob{Data: make([]byte, 41)}}, // over MaxStringLen
		{small, chatSay{Room: strings.Repeat("r", 41)}},
		{r, slowFloat{F: 1.5}}, // no fast path
		{r, Raw{Type: "x", Body: []byte{1}}},
		{r, struct{ X int }{1}}, // unregistered
		{r, nil},
	} {
		if name, n, ok := tc.r.BodySize(tc.v); ok {
			t.Errorf("BodySize(%#v) = %q, %d; want not known", tc.v, name, n)
		}
		checkBodySize(t, tc.r, tc.v)
	}
	checkBodySize(t, small, fastBlob{Data: make([]byte, 40)}) // at the limit
	if _, _, ok := small.BodySize(fastBlob{Data: make([]byte, 40)}); !ok && small.encEntry(fastBlob{}).fast != nil {
		t.Error("BodySize at MaxStringLen not known")
	}
}

func TestFastPathFallsBack(t *testing.T) {
	r := newFastRegistry(t)
	for _, tc := range []struct {
		name string
		typ  string
		body string // hex
		want any    // nil: an error
	}{
		{"keys out of order", "test.Point", "a2 6159 01 6158 02", point{X: 2, Y: 1}},
		{"key case differs", "test.Point", "a1 6178 05", point{X: 5}},
		{"unknown key", "test.Point", "a2 6158 01 615a 02", point{X: 1}},
		{"indefinite map", "test.Point", "bf 6158 01 ff", point{X: 1}},
		{"non-minimal int", "test.Point", "a1 6158 1801", point{X: 1}},
		{"duplicate key", "test.Point", "a2 6158 01 6158 02", nil},
		{"int overflow", "fast.All", "a1 6249 38 1880", nil},
		{"int8 fits", "fast.All", "a1 6249 38 387f", fastAll{I8: -128}},
		{"uint8 overflow", "fast.All", "a1 6255 38 190100", nil},
		{"negative uint", "fast.All", "a1 6155 20", nil},
		{"bad UTF-8", "chat.Say", "a1 6452 6f 6f 6d 61 ff", nil},
		{"bad UTF-8 in unknown field", "chat.Say", "a1 6158 61 ff", nil},
		{"bytes as text", "fast.Blob", "a1 6444617461 6141", nil},
		{"null bytes", "fast.Blob", "a1 6444617461 f6", fastBlob{}},
		{"trailing bytes", "test.Point", "a1 6158 01 00", nil},
		{"truncated", "test.Point", "a2 6158 01 6159", nil},
		{"not a map", "test.Point", "82 01 02", nil},
		{"empty", "test.Point", "", nil},
	} {
		body := hx(strings.ReplaceAll(tc.body, " ", ""))
		got, err := r.Decode(tc.typ, body)
		if tc.want == nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: Decode = %#v, %v; want ErrMalformed", tc.name, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Decode = %#v, %v; want %#v", tc.name, got, err, tc.want)
		}
	}
}

func TestFastEncodeRefusesWhatDecodeRejects(t *testing.T) {
	r := newFastRegistry(t)
	if _, _, err := r.Encode(chatSay{Text: "a\xffb"}); !errors.Is(err, ErrMalformed) {
		t.Errorf("invalid UTF-8: %v", err)
	}
	small := newTestRegistry(t, WithLimits(Limits{MaxDepth: 8, MaxArrayElements: 16, MaxMapPairs: 16, MaxStringLen: 4}))
	MustRegister[fastBlob](small, "fast.Blob")
	if _, _, err := small.Encode(fastBlob{Data: []byte("12345")}); !errors.Is(err, ErrMalformed) {
		t.Errorf("long byte string: %v", err)
	}
	if _, err := small.Decode("fast.Blob", hx("a1644461746145"+"3132333435")); !errors.Is(err, ErrMalformed) {
		t.Errorf("decoding a long byte string: %v", err)
	}
}

func TestReadMessageCarvesIndependentValues(t *testing.T) {
	r := newFastRegistry(t)
	var stream bytes.Buffer
	fw := NewFrameWriter(&stream, 0)
	const n = 500
	for i := range n {
		var v any = fastBlob{Data: bytes.Repeat([]byte{byte(i)}, i%40)}
		switch i % 7 {
		case 3:
			v = chatSay{Room: "r", Text: strings.Repeat("t", i)}
		case 5:
			v = Raw{Type: "unknown.Type", Body: []byte{0x18, byte(i)}}
		}
		typ, body, err := r.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		if i%11 == 10 {
			body = []byte{0xa1, 0x64, 'D', 'a', 't', 'a', 0x61, 'x'} // text where bytes belong
			typ = "fast.Blob"
		}
		if err := fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "sink", Type: typ, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	fr := NewFrameReader(&stream, 0)
	got := make([]any, n)
	for i := range n {
		var e Envelope
		v, err := fr.ReadMessage(r, &e)
		if i%11 == 10 {
			if !errors.Is(err, ErrMalformed) || fr.Err() != nil || e.Type != "fast.Blob" {
				t.Fatalf("message %d: %v, %v (stream error %v)", i, v, err, fr.Err())
			}
			continue
		}
		if err != nil || e.To != "sink" || e.Body != nil {
			t.Fatalf("message %d: %v, %+v", i, err, e)
		}
		got[i] = v
	}
	for i, v := range got {
		var want any
		switch {
		case i%11 == 10:
			continue
		case i%7 == 3:
			want = chatSay{Room: "r", Text: strings.Repeat("t", i)}
		case i%7 == 5:
			want = Raw{Type: "unknown.Type", Body: []byte{0x18, byte(i)}}
		case i%40 == 0:
			want = fastBlob{Data: []byte{}}
		default:
			want = fastBlob{Data: bytes.Repeat([]byte{byte(i)}, i%40)}
		}
		if !reflect.DeepEqual(normalizeRaw(v), want) {
			t.Fatalf("message %d = %#v, want %#v", i, v, want)
		}
	}
}

// normalizeRaw drops the RawMessage type of a Raw's body for comparison.
func normalizeRaw(v any) any {
	if raw, ok := v.(Raw); ok {
		raw.Body = []byte(raw.Body)
	}
	return v
}

// A pointer-shaped type (its one field an unexported pointer) has no fast
// path (compileFast refuses it: its interface values hold the pointer, not
// a pointer to the struct) and encodes as an empty map.
func TestFastEncodePointerShaped(t *testing.T) {
	type opaque struct{ p *int }
	r, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	MustRegister[opaque](r, "test.Opaque")
	x := 7
	name, body, err := r.AppendEncode(nil, opaque{p: &x})
	if err != nil || name != "test.Opaque" || !bytes.Equal(body, []byte{0xa0}) {
		t.Fatalf("AppendEncode = %q, % x, %v; want test.Opaque, a0", name, body, err)
	}
}

// AppendEncode keeps the entry of the type it encoded last: values of
// other types, Raw, nil and unregistered types in between are still told
// apart.
func TestAppendEncodeTypeChanges(t *testing.T) {
	r := newFastRegistry(t)
	type unregistered struct{ X int }
	raw := Raw{Type: "x", Body: []byte{0x01}}
	for i, v := range []any{
		fastBlob{Data: []byte{1}}, fastBlob{Data: []byte{2}}, fastTagged{ID: 3, Text: "t"},
		raw, fastBlob{}, nil, unregistered{1}, fastTagged{}, raw, raw, fastBlob{Data: []byte{4}},
	} {
		name, body, err := r.AppendEncode(nil, v)
		switch v := v.(type) {
		case Raw:
			if err != nil || name != v.Type || !bytes.Equal(body, v.Body) {
				t.Errorf("%d: Raw: %q, %x, %v", i, name, body, err)
			}
		case nil, unregistered:
			if !errors.Is(err, ErrUnregistered) {
				t.Errorf("%d: %T: %v, want ErrUnregistered", i, v, err)
			}
		default:
			want, _ := r.enc.Marshal(v)
			wantName, _ := r.TypeName(reflect.TypeOf(v))
			if err != nil || name != wantName || !bytes.Equal(body, want) {
				t.Errorf("%d: %T: %q, %x, %v; want %q, %x", i, v, name, body, err, wantName, want)
			}
		}
	}
}
