package codec

import (
	"errors"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// What the registry refuses: bad registrations, values that do not
// encode or decode, codec methods that panic.

func TestRegisterErrors(t *testing.T) {
	r := newTestRegistry(t)
	tests := []struct {
		name string
		reg  func() error
		want error
	}{
		{"duplicate name", func() error { return Register[struct{ A int }](r, "test.Point") }, ErrDuplicate},
		{"duplicate type", func() error { return Register[point](r, "test.Point2") }, ErrDuplicate},
		{"duplicate builtin", func() error { return Register[string](r, "text") }, ErrDuplicate},
		{"empty name", func() error { return Register[struct{ B int }](r, "") }, ErrInvalidRegistration},
		{"name not UTF-8", func() error { return Register[struct{ B int }](r, "x\xff") }, ErrInvalidRegistration},
		{"name too long", func() error { return Register[struct{ B int }](r, strings.Repeat("n", MaxNameLen+1)) }, ErrInvalidRegistration},
		{"pointer", func() error { return Register[*point](r, "test.PointPtr") }, ErrInvalidRegistration},
		{"interface", func() error { return Register[error](r, "test.Error") }, ErrInvalidRegistration},
		{"any", func() error { return Register[any](r, "test.Any") }, ErrInvalidRegistration},
		{"func", func() error { return Register[func()](r, "test.Func") }, ErrInvalidRegistration},
		{"chan", func() error { return Register[chan int](r, "test.Chan") }, ErrInvalidRegistration},
		{"Raw", func() error { return Register[Raw](r, "test.Raw") }, ErrInvalidRegistration},
		{"struct with chan", func() error { return Register[withChan](r, "test.WithChan") }, ErrInvalidRegistration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := r.Len()
			err := tt.reg()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if r.Len() != before {
				t.Errorf("failed registration changed the registry")
			}
		})
	}
}

func TestMustRegisterPanics(t *testing.T) {
	r := newTestRegistry(t)
	defer func() {
		if err, ok := recover().(error); !ok || !errors.Is(err, ErrDuplicate) {
			t.Errorf("recovered %v, want ErrDuplicate", err)
		}
	}()
	MustRegister[point](r, "again")
}

func TestEncodeErrors(t *testing.T) {
	r := newTestRegistry(t)
	tests := []struct {
		name    string
		v       any
		want    error
		mention string
	}{
		{"unregistered struct", struct{ Q int }{}, ErrUnregistered, "struct { Q int }"},
		{"unregistered named", withChan{}, ErrUnregistered, "codec.withChan"},
		{"pointer to registered", &point{}, ErrUnregistered, "*codec.point"},
		{"nil", nil, ErrUnregistered, "nil"},
		{"Raw without type", Raw{Body: cbor.RawMessage{0xf6}}, ErrMalformed, "empty type"},
		{"Raw with bad type", Raw{Type: "\xff", Body: cbor.RawMessage{0xf6}}, ErrMalformed, "UTF-8"},
		{"Raw with empty body", Raw{Type: "x"}, ErrMalformed, "empty"},
		{"Raw with bad body", Raw{Type: "x", Body: cbor.RawMessage{0x82, 0x01}}, ErrMalformed, "truncated"},
		{"Raw with two items", Raw{Type: "x", Body: cbor.RawMessage{0x01, 0x02}}, ErrMalformed, "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := r.Encode(tt.v)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	lim := Limits{MaxDepth: 4, MaxArrayElements: 16, MaxMapPairs: 16, MaxStringLen: 32}
	r := newTestRegistry(t, WithLimits(lim))
	long := strings.Repeat("a", 33)
	tests := []struct {
		name     string
		typeName string
		body     []byte
	}{
		{"empty body", "test.Point", nil},
		{"truncated", "test.Point", hx("a2 61 58 01")},
		{"trailing bytes", "test.Point", hx("a0 00")},
		{"two items", "unknown", hx("01 02")},
		{"reserved additional info", "unknown", hx("1c")},
		{"misplaced break", "unknown", hx("ff")},
		{"break inside map pair", "unknown", hx("bf 01 ff")},
		{"indefinite integer", "unknown", hx("1f")},
		{"indefinite tag", "unknown", hx("df 00")},
		{"bad simple value", "unknown", hx("f8 10")},
		{"too deep", "test.Map", hx("a1 61 61 81 81 81 81 00")},
		{"too deep with tags", "unknown", hx("c1 c1 c1 c1 c1 00")},
		{"array too long", "test.Points", append(hx("91"), make([]byte, 17)...)},
		{"indefinite array too long", "unknown", append(append(hx("9f"), make([]byte, 17)...), 0xff)},
		{"map too large", "test.Map", append(hx("b1"), make([]byte, 34)...)},
		{"array count beyond data", "unknown", hx("9b 7fffffffffffffff 00")},
		{"map count beyond data", "unknown", hx("bb 7fffffffffffffff 00")},
		{"byte string too long", "bytes", append(hx("58 21"), make([]byte, 33)...)},
		{"text too long", "string", append(hx("78 21"), long...)},
		{"indefinite text too long", "string", append(append(append(hx("7f 70"), long[:16]...), append(hx("71"), long[:17]...)...), 0xff)},
		{"indefinite chunk of wrong type", "string", hx("7f 41 61 ff")},
		{"nested indefinite chunk", "string", hx("7f 7f ff ff")},
		{"unterminated indefinite string", "string", hx("7f 61 61")},
		{"string length beyond data", "string", hx("7b ffffffffffffffff")},
		{"invalid UTF-8", "string", hx("62 c3 28")},
		{"invalid UTF-8 in map key", "test.Point", hx("a1 61 ff 01")},
		{"invalid UTF-8 in unknown type", "unknown", hx("61 ff")},
		{"duplicate map keys", "test.Point", hx("a2 61 58 01 61 58 02")},
		{"duplicate map keys in map", "test.Map", hx("a2 61 61 01 61 61 02")},
		{"wrong type for field", "test.Point", hx("a1 61 58 61 61")},
		{"wrong type for message", "test.Point", hx("83 01 02 03")},
		{"negative into uint64", "uint64", hx("20")},
		{"overflowing int", "int64", hx("1b ffffffffffffffff")},
		{"text into bool", "bool", hx("61 61")},
		{"bad time", "test.Stamped", hx("a1 62 4174 c0 63 616263")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := r.Decode(tt.typeName, tt.body)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode = %#v, %v; want ErrMalformed", v, err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestEncodeRefusesWhatDecodeRejects(t *testing.T) {
	r := newTestRegistry(t, WithLimits(Limits{MaxDepth: 4, MaxArrayElements: 16, MaxMapPairs: 16, MaxStringLen: 8}))
	for name, v := range map[string]any{
		"invalid UTF-8":   "\xff",
		"string too long": "123456789",
		"too many points": make([]point, 17),
	} {
		if _, _, err := r.Encode(v); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

// touchy's own CBOR methods panic on some values, as a buggy application
// type may.
type touchy struct{ N int }

func (t touchy) MarshalCBOR() ([]byte, error) {
	if t.N < 0 {
		panic("negative")
	}
	return cbor.Marshal(t.N)
}

func (t *touchy) UnmarshalCBOR(b []byte) error {
	if err := cbor.Unmarshal(b, &t.N); err != nil {
		return err
	}
	if t.N == 13 {
		panic("unlucky")
	}
	return nil
}

// A type whose own encoder or decoder panics gets an error wrapping
// ErrMalformed instead: one bad message costs the goroutine that encodes or
// decodes a stream nothing else.
func TestPanickingCodecMethodsAreErrors(t *testing.T) {
	r, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	MustRegister[touchy](r, "test.touchy")
	if _, _, err := r.Encode(touchy{N: -1}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("encode of a panicking value: %v", err)
	}
	_, body, err := r.Encode(touchy{N: 13})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := r.Decode("test.touchy", body); !errors.Is(err, ErrMalformed) || v != nil {
		t.Fatalf("decode of a panicking body: %v, %v", v, err)
	}
	_, body, _ = r.Encode(touchy{N: 7})
	if v, err := r.Decode("test.touchy", body); err != nil || v != (touchy{N: 7}) {
		t.Fatalf("decode after the panics: %v, %v", v, err)
	}
}
