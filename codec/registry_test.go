package codec

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// Message types used by the registry tests.
type (
	point struct{ X, Y int }
	shape struct {
		Name   string
		Points []point
		Center *point
		Tags   map[string]int
		Meta   map[int][]string
	}
	stamped struct {
		At   time.Time
		Opt  *time.Time
		Data []byte
	}
	bigNums struct {
		U   uint64
		I   int64
		Min int64
		F   float64
		F32 float32
		B   big.Int
	}
	withRef struct {
		Owner Ref
		Peers []Ref
	}
	empty     struct{}
	withChan  struct{ C chan int }
	namedList []string
)

// newTestRegistry returns a Registry with the test types registered.
func newTestRegistry(tb testing.TB, opts ...Option) *Registry {
	tb.Helper()
	r, err := NewRegistry(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	MustRegister[point](r, "test.Point")
	MustRegister[shape](r, "test.Shape")
	MustRegister[stamped](r, "test.Stamped")
	MustRegister[bigNums](r, "test.BigNums")
	MustRegister[withRef](r, "test.WithRef")
	MustRegister[empty](r, "test.Empty")
	MustRegister[namedList](r, "test.List")
	MustRegister[map[string]any](r, "test.Map")
	MustRegister[[]point](r, "test.Points")
	return r
}

func TestRegistryRoundTrip(t *testing.T) {
	r := newTestRegistry(t)
	at := time.Date(2026, 12, 2, 12, 30, 45, 123456789, time.FixedZone("X", 3600))
	b := new(big.Int).Lsh(big.NewInt(1), 100)
	tests := []struct {
		name     string
		v        any
		typeName string
	}{
		{"struct", point{X: 1, Y: -2}, "test.Point"},
		{"nested", shape{Name: "tri", Points: []point{{0, 0}, {1, 0}, {0, 1}}, Center: &point{1, 1},
			Tags: map[string]int{"a": 1, "b": 2}, Meta: map[int][]string{7: {"x", "y"}}}, "test.Shape"},
		{"nil pointer and containers", shape{Name: "none"}, "test.Shape"},
		{"empty containers", shape{Points: []point{}, Tags: map[string]int{}, Meta: map[int][]string{}}, "test.Shape"},
		{"time", stamped{At: at, Opt: &at, Data: []byte{0, 1, 2, 255}}, "test.Stamped"},
		{"zero time", stamped{}, "test.Stamped"},
		{"time in a zone offset by seconds", stamped{At: time.Date(1900, 1, 1, 0, 0, 0, 1, time.FixedZone("LMT", 1172))}, "test.Stamped"},
		{"large ints", bigNums{U: math.MaxUint64, I: math.MaxInt64, Min: math.MinInt64,
			F: math.MaxFloat64, F32: math.SmallestNonzeroFloat32, B: *b}, "test.BigNums"},
		{"refs", withRef{Owner: Ref{Peer: testPeerID, Name: "alice"}, Peers: []Ref{{Name: "local"}, {Peer: []byte{1}}}}, "test.WithRef"},
		{"ref", Ref{Peer: testPeerID, Name: "bob"}, "troupe.Ref"},
		{"empty ref", Ref{}, "troupe.Ref"},
		{"empty struct", empty{}, "test.Empty"},
		{"named slice", namedList{"a", "", "c"}, "test.List"},
		{"nil named slice", namedList(nil), "test.List"},
		{"map of any", map[string]any{"n": uint64(1), "s": "x", "l": []any{true, nil}}, "test.Map"},
		{"slice of structs", []point{{1, 2}}, "test.Points"},
		{"string", "hello", "string"},
		{"empty string", "", "string"},
		{"bytes", []byte("raw"), "bytes"},
		{"bool", true, "bool"},
		{"int", -42, "int"},
		{"int64", int64(math.MinInt64), "int64"},
		{"uint64", uint64(math.MaxUint64), "uint64"},
		{"float64", 0.1, "float64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, body, err := r.Encode(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.typeName {
				t.Errorf("type name = %q, want %q", name, tt.typeName)
			}
			got, err := r.Decode(name, body)
			if err != nil {
				t.Fatal(err)
			}
			if reflect.TypeOf(got) != reflect.TypeOf(tt.v) {
				t.Fatalf("decoded a %T, want %T", got, tt.v)
			}
			if !equalValues(got, tt.v) {
				t.Errorf("round trip:\n got %#v\nwant %#v", got, tt.v)
			}
		})
	}
}

// equalValues compares decoded values, treating times as equal instants and
// big.Ints by value.
func equalValues(a, b any) bool {
	switch a := a.(type) {
	case stamped:
		b := b.(stamped)
		return a.At.Equal(b.At) && (a.Opt == nil) == (b.Opt == nil) &&
			(a.Opt == nil || a.Opt.Equal(*b.Opt)) && reflect.DeepEqual(a.Data, b.Data)
	case bigNums:
		b := b.(bigNums)
		if a.B.Cmp(&b.B) != 0 {
			return false
		}
		a.B, b.B = big.Int{}, big.Int{}
		return reflect.DeepEqual(a, b)
	}
	return reflect.DeepEqual(a, b)
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := newTestRegistry(t), newTestRegistry(t, WithoutBuiltins())
	if err := Register[struct{ Z int }](a, "only.A"); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.TypeName(reflect.TypeFor[struct{ Z int }]()); ok {
		t.Error("registration leaked into another registry")
	}
	if _, _, err := b.Encode("s"); !errors.Is(err, ErrUnregistered) {
		t.Errorf("WithoutBuiltins registry encoded a string: %v", err)
	}
	if name, ok := a.TypeName(reflect.TypeFor[Ref]()); !ok || name != "troupe.Ref" {
		t.Errorf("TypeName(Ref) = %q, %v", name, ok)
	}
}

func TestRawPassesThrough(t *testing.T) {
	sender := newTestRegistry(t)
	receiver, err := NewRegistry(WithoutBuiltins())
	if err != nil {
		t.Fatal(err)
	}
	name, body, err := sender.Encode(point{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	// Unknown to the receiver: a Raw.
	v, err := receiver.Decode(name, body)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := v.(Raw)
	if !ok || raw.Type != "test.Point" || string(raw.Body) != string(body) {
		t.Fatalf("Decode of unknown type = %#v", v)
	}
	// Forwarded as is, it reaches a peer that knows the type.
	name2, body2, err := receiver.Encode(raw)
	if err != nil {
		t.Fatal(err)
	}
	back, err := sender.Decode(name2, body2)
	if err != nil {
		t.Fatal(err)
	}
	if back != (point{3, 4}) {
		t.Errorf("forwarded Raw decoded to %#v", back)
	}
	// A CLI can make up a Raw with any name.
	name3, body3, err := receiver.Encode(Raw{Type: "cli.Anything", Body: cbor.RawMessage{0xa0}})
	if err != nil || name3 != "cli.Anything" || string(body3) != "\xa0" {
		t.Errorf("Encode(Raw) = %q, %x, %v", name3, body3, err)
	}
}

func TestDefaultLimitsAccept(t *testing.T) {
	r := newTestRegistry(t)
	nested := append(append(make([]byte, 0, 64), strings.Repeat("\x81", DefaultMaxDepth-1)...), 0)
	if _, err := r.Decode("unknown", nested); err != nil {
		t.Errorf("nesting of %d levels: %v", DefaultMaxDepth-1, err)
	}
	tooDeep := append([]byte{0x81}, nested...)
	if _, err := r.Decode("unknown", append([]byte{0x81}, tooDeep...)); !errors.Is(err, ErrMalformed) {
		t.Errorf("nesting deeper than the default: %v", err)
	}
	if got := r.Limits(); got != DefaultLimits() {
		t.Errorf("Limits() = %+v", got)
	}
}

func TestWithLimitsValidates(t *testing.T) {
	base := DefaultLimits()
	for name, mutate := range map[string]func(*Limits){
		"depth too small":   func(l *Limits) { l.MaxDepth = 3 },
		"depth too large":   func(l *Limits) { l.MaxDepth = maxMaxDepth + 1 },
		"array too small":   func(l *Limits) { l.MaxArrayElements = 15 },
		"map too large":     func(l *Limits) { l.MaxMapPairs = maxMaxContainer + 1 },
		"string zero":       func(l *Limits) { l.MaxStringLen = 0 },
		"string over frame": func(l *Limits) { l.MaxStringLen = MaxFrameLimit + 1 },
		"zero value":        func(l *Limits) { *l = Limits{} },
	} {
		l := base
		mutate(&l)
		if _, err := NewRegistry(WithLimits(l)); !errors.Is(err, ErrInvalidLimits) {
			t.Errorf("%s: err = %v, want ErrInvalidLimits", name, err)
		}
	}
}

func TestRegistryConcurrentUse(t *testing.T) {
	r := newTestRegistry(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				name, body, err := r.Encode(point{g, i})
				if err != nil {
					t.Error(err)
					return
				}
				if v, err := r.Decode(name, body); err != nil || v != (point{g, i}) {
					t.Errorf("Decode = %v, %v", v, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		type late struct{ N int }
		if err := Register[late](r, "test.Late"); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
}

// Encoding remembers the last type it saw; values of other types, from
// several goroutines at once, still get their own names.
func TestAppendEncodeAlternatingTypes(t *testing.T) {
	r := newTestRegistry(t)
	values := []struct {
		v    any
		name string
	}{{point{}, "test.Point"}, {empty{}, "test.Empty"}, {point{}, "test.Point"}, {Raw{Type: "x.Y", Body: []byte{0xa0}}, "x.Y"}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				want := values[(i+g)%len(values)]
				name, _, err := r.AppendEncode(nil, want.v)
				if err != nil || name != want.name {
					t.Errorf("AppendEncode(%T) = %q, %v; want %q", want.v, name, err, want.name)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, _, err := r.AppendEncode(nil, struct{ X int }{}); !errors.Is(err, ErrUnregistered) {
		t.Fatalf("unregistered type: %v", err)
	}
}

// TestRegisterOnce: the same type under the same name again is fine; the
// name taken by another type, or the type under another name, is not.
func TestRegisterOnce(t *testing.T) {
	type a struct{ X int }
	type b struct{ Y int }
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterOnce[a](reg, "test.a"); err != nil {
		t.Fatal(err)
	}
	if err := RegisterOnce[a](reg, "test.a"); err != nil {
		t.Fatalf("the same registration again: %v", err)
	}
	if err := RegisterOnce[b](reg, "test.a"); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("another type under a taken name: %v, want ErrDuplicate", err)
	}
	if err := RegisterOnce[a](reg, "test.other"); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a registered type under another name: %v, want ErrDuplicate", err)
	}
}
