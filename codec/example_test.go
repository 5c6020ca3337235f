package codec_test

import (
	"bytes"
	"fmt"

	"github.com/troupe-mesh/troupe/codec"
)

// Say is a chat message, as an application would define it.
type Say struct {
	Room string
	Text string
}

// This example registers a message type, sends it through a frame stream
// and decodes it back to the concrete type.
func ExampleRegister() {
	reg, err := codec.NewRegistry()
	if err != nil {
		panic(err)
	}
	codec.MustRegister[Say](reg, "chat.Say")

	// Sender: encode the body, wrap it in an envelope, frame it.
	typeName, body, err := reg.Encode(Say{Room: "lobby", Text: "hi"})
	if err != nil {
		panic(err)
	}
	var stream bytes.Buffer
	fw := codec.NewFrameWriter(&stream, 0)
	env := codec.Envelope{Kind: codec.KindUser, To: "lobby", FromName: "alice", Type: typeName, Body: body}
	if err := fw.WriteEnvelope(&env); err != nil {
		panic(err)
	}
	if err := fw.Flush(); err != nil { // the outgoing queue is empty
		panic(err)
	}

	// Receiver: read the frame, decode the body by its type name.
	fr := codec.NewFrameReader(&stream, 0)
	var got codec.Envelope
	if err := fr.ReadEnvelope(&got); err != nil {
		panic(err)
	}
	msg, err := reg.Decode(got.Type, got.Body)
	if err != nil {
		panic(err)
	}
	say := msg.(Say) // a value, not a pointer
	fmt.Printf("%s from %s to %s: %q in %s\n", got.Type, got.FromName, got.To, say.Text, say.Room)

	// Encoding an unregistered type fails and names the type.
	_, _, err = reg.Encode(&say)
	fmt.Println(err)
	// Output:
	// chat.Say from alice to lobby: "hi" in lobby
	// codec: unregistered type: *codec_test.Say
}

// This example shows a peer that does not know a type: it gets a Raw, which
// it can inspect or forward unchanged.
func ExampleRegistry_Decode_raw() {
	sender, _ := codec.NewRegistry()
	codec.MustRegister[Say](sender, "chat.Say")
	receiver, _ := codec.NewRegistry()

	name, body, _ := sender.Encode(Say{Room: "lobby", Text: "hi"})
	msg, _ := receiver.Decode(name, body)
	raw := msg.(codec.Raw)
	fmt.Printf("%s: %x\n", raw.Type, []byte(raw.Body))

	forwardedName, _, err := receiver.Encode(raw)
	fmt.Println(forwardedName, err)
	// Output:
	// chat.Say: a264526f6f6d656c6f6262796454657874626869
	// chat.Say <nil>
}

// This example prints the envelope described in the package documentation.
func ExampleAppendEnvelope() {
	env := codec.Envelope{
		Kind:     codec.KindUser,
		To:       "lobby",
		FromName: "alice",
		Type:     "chat.Say",
		Body:     []byte{0xa1, 0x61, 0x74, 0x62, 0x68, 0x69}, // {"t": "hi"}
	}
	data, err := codec.AppendEnvelope(nil, &env)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bytes: %x\n", len(data), data)
	// Output:
	// 33 bytes: 8601656c6f626279824065616c69636568636861742e53617946a1617462686900
}
