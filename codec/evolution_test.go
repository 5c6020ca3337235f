package codec

import (
	"testing"
	"time"
)

// Two versions of the same message, as two builds of a peer would define
// it. The wire keys are the field names.
type (
	sayV1 struct {
		Room string
		Text string
	}
	sayV2 struct {
		Room  string
		Text  string
		At    time.Time         // added in v2
		Reply *Ref              // added in v2
		Tags  map[string]string // added in v2
	}
)

// The same evolution with explicit integer keys, which are more compact
// and let fields be renamed freely.
type (
	joinV1 struct {
		Room string `cbor:"1,keyasint"`
		Nick string `cbor:"2,keyasint"`
	}
	joinV2 struct {
		RoomName string `cbor:"1,keyasint"` // renamed in Go, same key
		Nick     string `cbor:"2,keyasint"`
		Color    uint8  `cbor:"3,keyasint,omitempty"` // added in v2
	}
	// joinV3 dropped Nick; key 2 must not be reused for another meaning.
	joinV3 struct {
		RoomName string `cbor:"1,keyasint"`
		Color    uint8  `cbor:"3,keyasint,omitempty"`
	}
)

// peerWith returns a registry that registers T under name, as a peer
// running that version would.
func peerWith[T any](t *testing.T, name string) *Registry {
	t.Helper()
	r, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := Register[T](r, name); err != nil {
		t.Fatal(err)
	}
	return r
}

// transfer encodes v on one peer and decodes it on another.
func transfer(t *testing.T, from, to *Registry, v any) any {
	t.Helper()
	name, body, err := from.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := to.Decode(name, body)
	if err != nil {
		t.Fatalf("decoding %T on the other version: %v", v, err)
	}
	return got
}

func TestEvolutionAddedField(t *testing.T) {
	old, cur := peerWith[sayV1](t, "chat.Say"), peerWith[sayV2](t, "chat.Say")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// Old to new: the added fields are left at their zero values.
	got := transfer(t, old, cur, sayV1{Room: "lobby", Text: "hi"}).(sayV2)
	if got.Room != "lobby" || got.Text != "hi" || !got.At.IsZero() || got.Reply != nil || got.Tags != nil {
		t.Errorf("old to new: %+v", got)
	}
	// New to old: the unknown fields are ignored.
	v2 := sayV2{Room: "lobby", Text: "hi", At: at, Reply: &Ref{Name: "bob"}, Tags: map[string]string{"k": "v"}}
	if got := transfer(t, cur, old, v2).(sayV1); got != (sayV1{Room: "lobby", Text: "hi"}) {
		t.Errorf("new to old: %+v", got)
	}
}

func TestEvolutionIntegerKeys(t *testing.T) {
	v1, v2, v3 := peerWith[joinV1](t, "chat.Join"), peerWith[joinV2](t, "chat.Join"), peerWith[joinV3](t, "chat.Join")
	if got := transfer(t, v1, v2, joinV1{Room: "r", Nick: "n"}).(joinV2); got != (joinV2{RoomName: "r", Nick: "n"}) {
		t.Errorf("v1 to v2: %+v", got)
	}
	if got := transfer(t, v2, v1, joinV2{RoomName: "r", Nick: "n", Color: 3}).(joinV1); got != (joinV1{Room: "r", Nick: "n"}) {
		t.Errorf("v2 to v1: %+v", got)
	}
	if got := transfer(t, v3, v1, joinV3{RoomName: "r", Color: 3}).(joinV1); got != (joinV1{Room: "r"}) {
		t.Errorf("v3 to v1: %+v", got)
	}
	if got := transfer(t, v1, v3, joinV1{Room: "r", Nick: "n"}).(joinV3); got != (joinV3{RoomName: "r"}) {
		t.Errorf("v1 to v3: %+v", got)
	}
	// Integer keys are compact: {1: "r", 2: "n"} is 7 bytes.
	_, body, err := v1.Encode(joinV1{Room: "r", Nick: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if want := hx("a2 01 61 72 02 61 6e"); string(body) != string(want) {
		t.Errorf("body = %x, want %x", body, want)
	}
}

func TestEvolutionFieldNamesAreTheKeys(t *testing.T) {
	// The documented contract: a struct without tags is a map keyed by
	// Go field names.
	r := peerWith[sayV1](t, "chat.Say")
	_, body, err := r.Encode(sayV1{Room: "a", Text: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := hx("a2 64 526f6f6d 61 61 64 54657874 61 62"); string(body) != string(want) {
		t.Errorf("body = %x, want %x", body, want)
	}
}
