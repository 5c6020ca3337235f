package codec

import "errors"

// Errors returned by the codec. Every failure caused by input that came from
// the network wraps ErrMalformed, ErrFrameTooLarge or ErrUnknownKind, so a
// caller can classify it with errors.Is. The other sentinels report mistakes
// made by the local program (registering or encoding the wrong thing).
var (
	// ErrMalformed reports input that is not a valid frame, envelope or
	// message body: truncated data, invalid CBOR, a field of the wrong type,
	// invalid UTF-8 in a name, a value over a decode limit, or duplicate map
	// keys. It is also returned by the encoders when asked to produce such
	// data (for example a name that is not valid UTF-8).
	ErrMalformed = errors.New("codec: malformed input")

	// ErrMalformedEnvelope reports a frame whose envelope (as opposed to
	// the message body it carries) is malformed. FrameReader.ReadEnvelope
	// and FrameReader.ReadMessage return it wrapped together with
	// ErrMalformed, so both match with errors.Is. No writer of this
	// package produces such a frame: a peer that sends one does not speak
	// the protocol, while a valid envelope whose body fails to decode
	// (an unknown type, a body of another shape) can come from a peer
	// that runs another version of the program.
	ErrMalformedEnvelope = errors.New("codec: malformed envelope")

	// ErrFrameTooLarge reports a frame whose declared length exceeds the
	// configured maximum. A FrameReader returns it before allocating or
	// reading the frame's payload; the stream must then be reset.
	ErrFrameTooLarge = errors.New("codec: frame too large")

	// ErrUnknownKind reports an envelope whose kind is not KindUser,
	// KindSystem or KindReply. The rest of the envelope is well formed and decoded.
	ErrUnknownKind = errors.New("codec: unknown envelope kind")

	// ErrFlushTimedOut is returned by FrameWriter.Flush when the write
	// timed out (the writer's deadline passed) before all was written.
	// The stream is intact: what was not written stays buffered, and the
	// next Flush writes it.
	ErrFlushTimedOut = errors.New("codec: flush timed out")

	// ErrBufferRefused reports that a FrameReader's Budget refused the
	// memory a frame needed (see WithBudget). The stream is broken, as
	// with ErrFrameTooLarge, and must be reset; the error also wraps the
	// Budget's own.
	ErrBufferRefused = errors.New("codec: frame buffer refused")

	// ErrUnregistered reports an attempt to encode a value whose Go type has
	// not been registered in the Registry.
	ErrUnregistered = errors.New("codec: unregistered type")

	// ErrDuplicate reports a registration whose name or Go type is already
	// registered.
	ErrDuplicate = errors.New("codec: duplicate registration")

	// ErrInvalidRegistration reports a registration with an unusable name
	// (empty, too long, not valid UTF-8) or Go type (interface, pointer,
	// function, channel, Raw, or a type the CBOR encoder rejects).
	ErrInvalidRegistration = errors.New("codec: invalid registration")

	// ErrInvalidLimits reports a Limits value outside the accepted ranges.
	ErrInvalidLimits = errors.New("codec: invalid limits")
)
