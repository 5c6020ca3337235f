package actor_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// replyTo is a message that carries a Ref, as a request naming where
// its answer goes does.
type replyTo struct {
	To   actor.Ref
	Note string
}

// TestRefInAMessageBody: a Ref in a message body survives the codec
// (it arrived as the zero Ref before MarshalBinary), the zero Ref stays
// zero, and a body whose Ref is not an address is an error, not a value.
func TestRefInAMessageBody(t *testing.T) {
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := codec.Register[replyTo](reg, "test.replyTo"); err != nil {
		t.Fatal(err)
	}
	ref, err := actor.NewRef("12D3KooWPxUj3pRpgHZ8dtpriYyBXwHnu4Uh7iUYXGXPTyzHCVX8", "echo")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []replyTo{{To: ref, Note: "hi"}, {Note: "no ref"}} {
		name, body, err := reg.Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := reg.Decode(name, body)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := out.(replyTo); !ok || got != in {
			t.Fatalf("%+v arrived as %+v", in, out)
		}
	}
	// The same body with the Ref's bytes replaced by a bad address.
	name, body, err := reg.Encode(replyTo{To: ref})
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(body, []byte("/echo"))
	if i < 0 {
		t.Fatalf("the Ref is not in the body %x", body)
	}
	bad := bytes.Clone(body)
	copy(bad[i:], "/e ho") // a space: not a name
	if _, err := reg.Decode(name, bad); err == nil || !errors.Is(err, actor.ErrInvalidName) {
		t.Fatalf("a body whose Ref is a bad address decoded, err %v", err)
	}
}
