package routing

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

func wireRegistry(t *testing.T) *codec.Registry {
	t.Helper()
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := registerWire(reg); err != nil {
		t.Fatal(err)
	}
	if err := registerWire(reg); err != nil {
		t.Fatalf("registering twice: %v", err)
	}
	return reg
}

func roundTrip(t *testing.T, reg *codec.Registry, e transport.Envelope) (any, bool) {
	t.Helper()
	kind, typ, body, err := toWire(reg, &e)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := codec.AppendEnvelope(nil, &codec.Envelope{Kind: kind, To: "x", Type: typ, Body: body, Corr: e.Corr})
	if err != nil {
		t.Fatal(err)
	}
	var env codec.Envelope
	if err := codec.DecodeEnvelope(buf, &env); err != nil {
		t.Fatal(err)
	}
	msg, reply, err := fromWire(reg, &env)
	if err != nil {
		t.Fatal(err)
	}
	return msg, reply
}

func TestSignalsRoundTrip(t *testing.T) {
	reg := wireRegistry(t)
	for _, m := range []any{
		transport.LinkSignal{},
		transport.UnlinkSignal{},
		transport.ExitSignal{Reason: actor.ErrKilled, Linked: true, Kill: true},
		transport.ExitSignal{},
		transport.MonitorSignal{ID: 7},
		transport.DemonitorSignal{ID: 7},
		transport.DownSignal{ID: 9, Reason: actor.ErrNoSuchActor},
		"a user string",
		int64(-5),
	} {
		got, reply := roundTrip(t, reg, transport.Envelope{Msg: m})
		if reply || !reflect.DeepEqual(got, m) {
			t.Fatalf("%#v came back as %#v (reply %v)", m, got, reply)
		}
	}
	got, reply := roundTrip(t, reg, transport.Envelope{Msg: "answer", Corr: 3, Reply: true})
	if !reply || got != "answer" {
		t.Fatalf("reply came back as %#v, %v", got, reply)
	}
	got, reply = roundTrip(t, reg, transport.Envelope{Msg: transport.Undeliverable{Reason: actor.ErrNoSuchActor}, Corr: 3, Reply: true})
	if u, ok := got.(transport.Undeliverable); !reply || !ok || !errors.Is(u.Reason, actor.ErrNoSuchActor) {
		t.Fatalf("undeliverable came back as %#v, %v", got, reply)
	}
}

func TestReasons(t *testing.T) {
	for _, err := range []error{nil, actor.ErrNoSuchActor, actor.ErrNodeDown, actor.ErrKilled, actor.ErrShutdown,
		actor.ErrNoRoute, actor.ErrRestartIntensity, ErrLinkFull, ErrTooLarge, ErrUnreachable, actor.ErrSystemLimit} {
		if got := decodeReason(encodeReason(err)); !errors.Is(got, err) && !(err == nil && got == nil) {
			t.Fatalf("%v came back as %v", err, got)
		}
	}
	wrapped := decodeReason(encodeReason(errors.Join(errors.New("context"), actor.ErrNodeDown)))
	if !errors.Is(wrapped, actor.ErrNodeDown) {
		t.Fatalf("wrapped sentinel lost: %v", wrapped)
	}
	other := decodeReason(encodeReason(&actor.PanicError{Value: "boom"}))
	var re *RemoteError
	if !errors.As(other, &re) || re.Text != "actor: panic: boom" {
		t.Fatalf("other reason: %#v", other)
	}
	// Its text is the other peer's, its dead-letter kind is not: a
	// hostile peer must not fill the kinds counted apart.
	for _, text := range []string{"actor: panic: boom", "made-up kind 1", "x: made-up kind 2"} {
		got := decodeReason(reasonBody{Code: codeOther, Text: text})
		if got.Error() != text || !errors.Is(got, ErrRemote) || actor.DeadLetterKind(got) != "remote error" {
			t.Fatalf("a remote %q came as %q, kind %q", text, got, actor.DeadLetterKind(got))
		}
	}
	// A long text is cut on a rune boundary: a signal's frame stays small.
	long := fmt.Errorf("%w: %s", actor.ErrNodeDown, strings.Repeat("é", maxReasonText))
	b := encodeReason(long)
	if len(b.Text) > maxReasonText || !utf8.ValidString(b.Text) || !strings.HasPrefix(long.Error(), b.Text) {
		t.Fatalf("a reason of %d bytes went out as %d bytes (valid UTF-8: %v)", len(long.Error()), len(b.Text), utf8.ValidString(b.Text))
	}
	if !errors.Is(decodeReason(b), actor.ErrNodeDown) {
		t.Fatal("the cut reason lost its sentinel")
	}
}

func TestUnknownSystemTypeIsMalformed(t *testing.T) {
	reg := wireRegistry(t)
	_, body, _ := reg.Encode("x")
	env := codec.Envelope{Kind: codec.KindSystem, To: "x", Type: "string", Body: body}
	if _, _, err := fromWire(reg, &env); !errors.Is(err, codec.ErrMalformed) {
		t.Fatalf("system message of a user type: %v", err)
	}
}
