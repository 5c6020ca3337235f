package daemon

import (
	"strings"
	"testing"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/codec"
)

// TestJSONMessagesRoundTrip: JSON from the command line becomes CBOR
// that decodes as a Raw (or as a registered type by its name) and back to
// the same JSON; an oversize message is refused.
func TestJSONMessagesRoundTrip(t *testing.T) {
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"hi":1,"list":[1,2.5,"x",true,null],"nested":{"a":{}}}`: `{"hi":1,"list":[1,2.5,"x",true,null],"nested":{"a":{}}}`,
		`"text"`:               `"text"`,
		`-9007199254740993`:    `-9007199254740993`,
		`18446744073709551615`: `18446744073709552000`,
	} {
		body, err := JSONToCBOR(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		msg, err := reg.Decode(JSONType, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(codec.Raw); !ok {
			t.Fatalf("%s: decoded as %T, want a Raw", in, msg)
		}
		out, err := toJSON(msg)
		if err != nil || cli.CompactJSON(out) != want {
			t.Fatalf("%s: got %s (%v), want %s", in, out, err, want)
		}
	}
	// A registered type name yields that type.
	body, _ := JSONToCBOR(`"hello"`)
	if msg, err := reg.Decode("string", body); err != nil || msg != "hello" {
		t.Fatalf("string: %v %v", msg, err)
	}
	if _, err := JSONToCBOR(strings.Repeat(" ", control.MaxJSONMessage+1)); err == nil {
		t.Fatal("oversize message accepted")
	}
}
