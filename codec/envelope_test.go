package codec

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// testPeerID is shaped like an Ed25519 libp2p peer ID (38 bytes).
var testPeerID = append([]byte{0x00, 0x24, 0x08, 0x01, 0x12, 0x20}, bytes.Repeat([]byte{0xab}, 32)...)

// chatSay is the chat message used by the size test and the benchmarks.
type chatSay struct {
	Room string
	Text string
}

// chatBody returns the CBOR encoding of a chatSay that is exactly 100 bytes.
func chatBody(tb testing.TB) []byte {
	tb.Helper()
	body, err := cbor.Marshal(chatSay{Room: "lobby", Text: strings.Repeat("x", 81)})
	if err != nil {
		tb.Fatal(err)
	}
	if len(body) != 100 {
		tb.Fatalf("chat body is %d bytes, want 100", len(body))
	}
	return body
}

// chatEnvelope returns a typical user message envelope with a 100-byte body.
func chatEnvelope(tb testing.TB, peer []byte) *Envelope {
	return &Envelope{
		Kind:     KindUser,
		To:       "lobby",
		FromPeer: peer,
		FromName: "alice",
		Type:     "chat.Say",
		Body:     chatBody(tb),
		Corr:     0,
	}
}

// wireEnvelope mirrors the envelope layout for a generic CBOR codec.
type wireEnvelope struct {
	_    struct{} `cbor:",toarray"`
	Kind uint64
	To   string
	From Ref
	Type string
	Body []byte
	Corr uint64
}

func TestEnvelopeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		env  Envelope
	}{
		{"minimal", Envelope{Kind: KindUser}},
		{"system", Envelope{Kind: KindSystem, To: "$sys", Type: "troupe.Down", Body: []byte{0xf6}}},
		{"chat", *chatEnvelope(t, testPeerID)},
		{"max corr", Envelope{Kind: KindUser, To: "a", Type: "t", Body: []byte{0}, Corr: ^uint64(0)}},
		{"corr sizes", Envelope{Kind: KindUser, Corr: 1 << 40}},
		{"unicode", Envelope{Kind: KindUser, To: "salle/café", FromName: "名前", Type: "chat.Say☃"}},
		{"max lengths", Envelope{
			Kind: KindUser, To: strings.Repeat("t", MaxNameLen), FromName: strings.Repeat("n", MaxNameLen),
			Type: strings.Repeat("y", MaxNameLen), FromPeer: bytes.Repeat([]byte{7}, MaxPeerIDLen),
			Body: bytes.Repeat([]byte{0x40}, 1)},
		},
		{"large body", Envelope{Kind: KindUser, Type: "blob", Body: append([]byte{0x5a, 0, 1, 0, 0}, make([]byte, 1<<16)...)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := AppendEnvelope(nil, &tt.env)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := EnvelopeSize(&tt.env)
			if n != len(data) {
				t.Errorf("envelopeSize = %d, encoding is %d bytes", n, len(data))
			}
			var got Envelope
			if err := DecodeEnvelope(data, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.env) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.env)
			}
			// The output is strictly valid CBOR that a generic decoder
			// reads back to the same values.
			dm, _ := cbor.DecOptions{DupMapKey: cbor.DupMapKeyEnforcedAPF}.DecMode()
			var w wireEnvelope
			if err := dm.Unmarshal(data, &w); err != nil {
				t.Fatalf("generic CBOR decoder: %v", err)
			}
			want := wireEnvelope{Kind: uint64(tt.env.Kind), To: tt.env.To,
				From: Ref{Peer: tt.env.FromPeer, Name: tt.env.FromName},
				Type: tt.env.Type, Body: tt.env.Body, Corr: tt.env.Corr}
			if !bytes.Equal(w.Body, want.Body) || !bytes.Equal(w.From.Peer, want.From.Peer) {
				t.Errorf("generic decode bytes differ: %+v", w)
			}
			w.Body, w.From.Peer, want.Body, want.From.Peer = nil, nil, nil, nil
			if !reflect.DeepEqual(w, want) {
				t.Errorf("generic decode:\n got %+v\nwant %+v", w, want)
			}
			// And a generic encoder's output decodes with DecodeEnvelope.
			em, _ := cbor.EncOptions{NilContainers: cbor.NilContainerAsEmpty}.EncMode()
			generic, err := em.Marshal(wireEnvelope{Kind: uint64(tt.env.Kind), To: tt.env.To,
				From: Ref{Peer: tt.env.FromPeer, Name: tt.env.FromName},
				Type: tt.env.Type, Body: tt.env.Body, Corr: tt.env.Corr})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(generic, data) {
				t.Errorf("generic encoding differs:\n got %.200x\nwant %.200x", data, generic)
			}
		})
	}
}

func TestDecodeEnvelopeDoesNotAlias(t *testing.T) {
	data, err := AppendEnvelope(nil, chatEnvelope(t, testPeerID))
	if err != nil {
		t.Fatal(err)
	}
	var e Envelope
	if err := DecodeEnvelope(data, &e); err != nil {
		t.Fatal(err)
	}
	want := *chatEnvelope(t, testPeerID)
	for i := range data {
		data[i] = 0xee
	}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("decoded envelope changed with its input: %+v", e)
	}
	// Appending to Body must not overwrite FromPeer.
	e.Body = append(e.Body, 1, 2, 3)
	if !bytes.Equal(e.FromPeer, testPeerID) {
		t.Error("appending to Body overwrote FromPeer")
	}
}

func TestEnvelopeSize(t *testing.T) {
	local, err := AppendEnvelope(nil, chatEnvelope(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(local) > 150 {
		t.Errorf("envelope with a 100-byte body and no peer ID is %d bytes, want <= 150", len(local))
	}
	remote, err := AppendEnvelope(nil, chatEnvelope(t, testPeerID))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100-byte body: %d bytes on the wire without FromPeer, %d with a 38-byte peer ID", len(local), len(remote))
}

func TestDecodeEnvelopeAllocs(t *testing.T) {
	data, err := AppendEnvelope(nil, chatEnvelope(t, testPeerID))
	if err != nil {
		t.Fatal(err)
	}
	var e Envelope
	allocs := testing.AllocsPerRun(100, func() {
		if err := DecodeEnvelope(data, &e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("DecodeEnvelope: %v allocations, want <= 2", allocs)
	}
	buf := make([]byte, 0, 256)
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := AppendEnvelope(buf[:0], &e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendEnvelope into a large enough buffer: %v allocations, want 0", allocs)
	}
}

func TestAppendEnvelopeErrors(t *testing.T) {
	long := strings.Repeat("n", MaxNameLen+1)
	bad := "a\xffb"
	tests := []struct {
		name string
		env  Envelope
		want error
	}{
		{"zero kind", Envelope{}, ErrUnknownKind},
		{"kind 4", Envelope{Kind: 4}, ErrUnknownKind},
		{"to too long", Envelope{Kind: KindUser, To: long}, ErrMalformed},
		{"from name too long", Envelope{Kind: KindUser, FromName: long}, ErrMalformed},
		{"type too long", Envelope{Kind: KindUser, Type: long}, ErrMalformed},
		{"peer too long", Envelope{Kind: KindUser, FromPeer: make([]byte, MaxPeerIDLen+1)}, ErrMalformed},
		{"to not UTF-8", Envelope{Kind: KindUser, To: bad}, ErrMalformed},
		{"from name not UTF-8", Envelope{Kind: KindUser, FromName: bad}, ErrMalformed},
		{"type not UTF-8", Envelope{Kind: KindUser, Type: bad}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte{1, 2, 3}
			out, err := AppendEnvelope(dst, &tt.env)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !bytes.Equal(out, []byte{1, 2, 3}) {
				t.Errorf("dst changed to %x", out)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindUser: "user", KindSystem: "system", KindReply: "reply", 0: "kind(0)", 9: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}
