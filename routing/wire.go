package routing

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// System message type names on the wire (the "troupe." prefix is reserved).
const (
	typeHello         = "troupe.hello"
	typeLink          = "troupe.link"
	typeUnlink        = "troupe.unlink"
	typeExit          = "troupe.exit"
	typeMonitor       = "troupe.monitor"
	typeDemonitor     = "troupe.demonitor"
	typeDown          = "troupe.down"
	typeUndeliverable = "troupe.undeliverable"
	typeLost          = "troupe.lost"
	typeReset         = "troupe.reset"
	typePause         = "troupe.pause"
)

// Bodies of the system messages. Field keys are stable.
type (
	helloBody struct {
		Incarnation uint64 `cbor:"1,keyasint"`
		// Stream numbers the writer's streams in the incarnation, in
		// the order it opened them (0: unnumbered, as from an older
		// peer): the reader of a stream supersedes those with lower
		// numbers.
		Stream uint64 `cbor:"2,keyasint,omitempty"`
		// Lost is, on a user stream, the writer's last loss toward the
		// reader when it opened the stream (0: none, or an older peer):
		// the reader hands nothing on before it acted on that loss's
		// lostBody (see Router.awaitLoss).
		Lost uint64 `cbor:"3,keyasint,omitempty"`
	}
	// lostBody, on a control stream, declares that messages its writer
	// sent the reader may have been lost (see Router.lossDeclared): the
	// reader takes the writer down here, at this point of the stream.
	// Session numbers the writer's declarations, increasing.
	lostBody struct {
		Session uint64 `cbor:"1,keyasint"`
	}
	// resetBody, on a control stream, says that its writer reset a stream
	// of the reader's that it could not read (bad bytes, a stall, a
	// memory limit) while the connection lived: the reader declares a
	// loss (lostBody).
	resetBody struct{}
	// pauseBody, on a control stream, says that its writer stopped
	// reading the reader's user stream (On), or reads it again: a reply
	// pause (replypause.go). A peer of an older version counts it as a
	// decode error and reads on.
	pauseBody struct {
		On bool `cbor:"1,keyasint,omitempty"`
	}
	reasonBody struct {
		Code uint8  `cbor:"1,keyasint"`
		Text string `cbor:"2,keyasint,omitempty"`
	}
	exitBody struct {
		Reason reasonBody `cbor:"1,keyasint"`
		Linked bool       `cbor:"2,keyasint,omitempty"`
		Kill   bool       `cbor:"3,keyasint,omitempty"`
	}
	monitorBody struct {
		ID uint64 `cbor:"1,keyasint"`
	}
	demonitorBody struct {
		ID uint64 `cbor:"1,keyasint"`
	}
	downBody struct {
		ID     uint64     `cbor:"1,keyasint"`
		Reason reasonBody `cbor:"2,keyasint"`
	}
	linkBody   struct{}
	unlinkBody struct{}
)

// registerWire registers the system bodies in reg (idempotent per registry).
// isWireType reports whether typ is one of the system message types above
// (or a fragment's). Other "troupe." types (lookups, the chat) are user
// messages; the prefix test keeps the common case to one comparison.
func isWireType(typ string) bool {
	if len(typ) < 8 || typ[:7] != "troupe." {
		return false
	}
	switch typ {
	case typeHello, typeLink, typeUnlink, typeExit, typeMonitor, typeDemonitor, typeDown, typeUndeliverable, typeFragment, typeLost, typeReset, typePause:
		return true
	}
	return false
}

func registerWire(reg *codec.Registry) error {
	return errors.Join(
		codec.RegisterOnce[helloBody](reg, typeHello),
		codec.RegisterOnce[linkBody](reg, typeLink),
		codec.RegisterOnce[unlinkBody](reg, typeUnlink),
		codec.RegisterOnce[demonitorBody](reg, typeDemonitor),
		codec.RegisterOnce[exitBody](reg, typeExit),
		codec.RegisterOnce[monitorBody](reg, typeMonitor),
		codec.RegisterOnce[downBody](reg, typeDown),
		codec.RegisterOnce[reasonBody](reg, typeUndeliverable),
		codec.RegisterOnce[fragmentBody](reg, typeFragment),
		codec.RegisterOnce[lostBody](reg, typeLost),
		codec.RegisterOnce[resetBody](reg, typeReset),
		codec.RegisterOnce[pauseBody](reg, typePause),
	)
}

// Reason codes: the sentinels every peer knows.
var reasonCodes = []error{
	nil, // 0: normal
	actor.ErrNoSuchActor,
	actor.ErrNodeDown,
	actor.ErrKilled,
	actor.ErrShutdown,
	actor.ErrNoRoute,
	actor.ErrRestartIntensity,
	ErrLinkFull,
	ErrTooLarge,
	ErrUnreachable,
	actor.ErrSystemLimit, // 10: older peers decode it as a RemoteError
	actor.ErrLinkRefused,
	actor.ErrUnknownType,
	actor.ErrMailboxFull,
}

const codeOther = 255

func encodeReason(err error) reasonBody {
	if err == nil {
		return reasonBody{}
	}
	text := reasonText(err.Error())
	for code, s := range reasonCodes[1:] {
		if errors.Is(err, s) {
			return reasonBody{Code: uint8(code + 1), Text: text}
		}
	}
	return reasonBody{Code: codeOther, Text: text}
}

// maxReasonText is the most bytes of an error's text a reason carries: a
// signal's frame stays far below the 64 KiB that every reader takes (see
// minReadFrame), whatever its peer's maximum frame.
const maxReasonText = 4 << 10

// reasonText is s cut to maxReasonText bytes at most, on a rune boundary.
func reasonText(s string) string {
	if len(s) <= maxReasonText {
		return s
	}
	i := maxReasonText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

func decodeReason(r reasonBody) error {
	switch {
	case r.Code == 0:
		return nil
	case int(r.Code) < len(reasonCodes):
		s := reasonCodes[r.Code]
		if r.Text == "" || r.Text == s.Error() {
			return s
		}
		return fmt.Errorf("%w (remote: %s)", s, r.Text)
	default:
		return &RemoteError{Text: r.Text}
	}
}

// toWire turns a message for the network into an envelope's kind, type and
// body. Signals and Undeliverable become system messages.
func toWire(reg *codec.Registry, e *transport.Envelope) (kind codec.Kind, typ string, body []byte, err error) {
	return appendWire(reg, nil, e.Msg, e.Reply)
}

// appendWire is toWire for the message msg, a reply if reply, appending
// the body to dst, which it returns extended (or unchanged on error).
func appendWire(reg *codec.Registry, dst []byte, msg any, reply bool) (kind codec.Kind, typ string, body []byte, err error) {
	var v any
	kind = codec.KindSystem
	switch m := msg.(type) {
	case transport.LinkSignal:
		typ, v = typeLink, linkBody{}
	case transport.UnlinkSignal:
		typ, v = typeUnlink, unlinkBody{}
	case transport.ExitSignal:
		typ, v = typeExit, exitBody{Reason: encodeReason(m.Reason), Linked: m.Linked, Kill: m.Kill}
	case transport.MonitorSignal:
		typ, v = typeMonitor, monitorBody{ID: uint64(m.ID)}
	case transport.DemonitorSignal:
		typ, v = typeDemonitor, demonitorBody{ID: uint64(m.ID)}
	case transport.DownSignal:
		typ, v = typeDown, downBody{ID: uint64(m.ID), Reason: encodeReason(m.Reason)}
	case transport.Undeliverable:
		typ, v = typeUndeliverable, encodeReason(m.Reason)
	case lostBody:
		typ, v = typeLost, m
	case resetBody:
		typ, v = typeReset, m
	case pauseBody:
		typ, v = typePause, m
	default:
		return appendUser(reg, dst, msg, reply)
	}
	if reply {
		kind = codec.KindReply
	}
	_, body, err = reg.AppendEncode(dst, v)
	return kind, typ, body, err
}

// appendUser is appendWire for a message that is not a signal.
func appendUser(reg *codec.Registry, dst []byte, msg any, reply bool) (kind codec.Kind, typ string, body []byte, err error) {
	kind = codec.KindUser
	if reply {
		kind = codec.KindReply
	}
	typ, body, err = reg.AppendEncode(dst, msg)
	return kind, typ, body, err
}

// fromWire turns a received envelope's body into the message for the actor
// system: a Signal, Undeliverable, or the decoded user value (codec.Raw for
// unknown types). reply reports an answer to an Ask.
func fromWire(reg *codec.Registry, env *codec.Envelope) (msg any, reply bool, err error) {
	v, err := reg.Decode(env.Type, env.Body)
	if err != nil {
		return nil, env.Kind == codec.KindReply, err
	}
	return fromValue(env, v)
}

// fromValue is fromWire for a body already decoded into v.
func fromValue(env *codec.Envelope, v any) (msg any, reply bool, err error) {
	reply = env.Kind == codec.KindReply
	if env.Kind == codec.KindUser {
		if isWireType(env.Type) {
			// Not for actors: a link, exit or down travels as a system
			// message, whose sender the runtime checks.
			return nil, false, fmt.Errorf("%w: user message of system type %q", codec.ErrMalformed, env.Type)
		}
		return v, false, nil
	}
	switch b := v.(type) {
	case linkBody:
		return transport.LinkSignal{}, reply, nil
	case unlinkBody:
		return transport.UnlinkSignal{}, reply, nil
	case exitBody:
		return transport.ExitSignal{Reason: decodeReason(b.Reason), Linked: b.Linked, Kill: b.Kill}, reply, nil
	case monitorBody:
		return transport.MonitorSignal{ID: actor.MonitorID(b.ID)}, reply, nil
	case demonitorBody:
		return transport.DemonitorSignal{ID: actor.MonitorID(b.ID)}, reply, nil
	case downBody:
		return transport.DownSignal{ID: actor.MonitorID(b.ID), Reason: decodeReason(b.Reason)}, reply, nil
	case reasonBody:
		return transport.Undeliverable{Reason: decodeReason(b)}, reply, nil
	case helloBody, lostBody, resetBody, pauseBody: // for the router
		return b, false, nil
	}
	if reply {
		// A reply of a user type travels as KindReply.
		return v, true, nil
	}
	return nil, false, fmt.Errorf("%w: system message of type %q", codec.ErrMalformed, env.Type)
}
