// Package codec is the wire format of the Troupe mesh: CBOR envelopes, a
// registry that maps stable type names to Go types, and length-prefixed
// frames with hard size limits. Every message between peers passes through
// it.
//
// codec stands alone: it imports neither actor nor libp2p. An envelope
// names its target and its sender by name; routing makes actor.Refs of
// them and of the stream's authenticated peer. Ref is a wire form of an
// actor reference for message bodies; routing does not use it.
//
// # Frames
//
// A stream is a sequence of frames. A frame is an unsigned varint (the
// multiformats unsigned-varint: little-endian base 128, minimal encoding,
// at most 9 bytes) giving the payload length in bytes, followed by the
// payload, which is exactly one envelope:
//
//	frame = uvarint(len(envelope)) envelope
//
// The receiver rejects a length above its maximum (DefaultMaxFrame, 4 MiB,
// unless configured) before allocating anything for the payload, and then
// resets the stream. FrameWriter batches frames and writes them on Flush;
// FrameReader reads in large chunks into one reused buffer.
//
// # Envelope
//
// An envelope is a CBOR array (RFC 8949) of definite length with these
// fields, at these stable indices:
//
//	index  field  CBOR type                      Envelope field
//	0      kind   uint: 1 user, 2 system, 3 reply Kind
//	1      to     text string                     To
//	2      from   array(2) [byte string, text]    FromPeer, FromName
//	3      type   text string                     Type
//	4      body   byte string (one CBOR item)     Body
//	5      corr   unsigned int, 0 = none          Corr
//
// For example, a user message to "lobby" from the local actor "alice", of
// type "chat.Say", whose body is the map {"t": "hi"} (6 bytes: a1 61 74 62
// 68 69), with no correlation ID, encodes as:
//
//	86                      array(6)
//	   01                   kind 1 (user)
//	   65 6c6f626279        "lobby"
//	   82                   array(2)
//	      40                h'' (empty peer ID: the stream's remote peer)
//	      65 616c696365     "alice"
//	   68 636861742e536179  "chat.Say"
//	   46 a16174626869      h'a16174626869'
//	   00                   corr 0
//
// The encoder always writes the shortest heads and definite lengths; the
// decoder accepts any valid head for the integers and lengths but rejects
// indefinite lengths, text that is not valid UTF-8, names longer than
// MaxNameLen, peer IDs longer than MaxPeerIDLen and trailing bytes. The
// envelope is valid CBOR: a generic CBOR decoder reads it as an array whose
// body element is a byte string holding the message's own CBOR encoding.
// With an empty FromPeer, as routing sends when the sender is the stream's
// remote peer (which the connection already authenticates), an envelope
// costs the body, the names and about 10 bytes: 128 bytes for a 100-byte
// body to "lobby" from "alice" of type "chat.Say", 39 more with a 38-byte
// peer ID.
//
// # Compact streams
//
// A stream mostly carries runs of envelopes with the same header: kind, To,
// FromPeer, FromName and Type. On a compact stream (FrameWriter and
// FrameReader made WithCompact(true); routing's protocol version 1.1.0),
// a frame may instead hold a short envelope, which carries only what
// changes:
//
//	short envelope = [body]          (corr 0)
//	               | [body, corr]
//
//	index  field  CBOR type
//	0      body   byte string (one CBOR item)
//	1      corr   unsigned int, 0 = none (optional)
//
// It stands for the full envelope with the body and corr it carries and
// the kind, To, From and Type of the stream's previous header, and decodes
// to exactly that envelope. A full envelope has at least six fields, so the
// array's length tells the two forms apart; an array of 0, 3, 4 or 5
// fields is malformed. The short form has no extension fields. Writers
// send [body] when corr is 0 and the shortest heads; readers accept any
// valid head, as for full envelopes. A 100-byte body to "lobby" from
// "alice" of type "chat.Say" costs 103 bytes as a short envelope instead
// of 128.
//
// The previous header is defined by the frames the reader has decoded on
// the stream, in order:
//
//   - At the start of a stream there is none: a short envelope there is
//     malformed.
//   - A full envelope that decodes, including one whose kind is unknown
//     (ErrUnknownKind: a short envelope repeating it is reported the same
//     way), makes its header the previous header. So does one whose body
//     then fails to decode (FrameReader.ReadMessage): the header was valid.
//   - A short envelope that decodes leaves the previous header as it is.
//   - An envelope that is malformed (ErrMalformed), full or short, leaves
//     no previous header, so the short envelopes after it are rejected
//     until the next full envelope, rather than delivered with an older
//     header. A frame taken with FrameReader.Next is not decoded and has
//     the same effect.
//   - A frame that breaks the stream (bad length prefix, oversize or
//     truncated frame) ends it: the stream is reset.
//
// A compact FrameWriter writes a short envelope exactly when the envelope
// repeats the header of the last full envelope it buffered; WriteFrame,
// whose frame it does not parse, makes the next envelope a full one. A
// writer never sends an envelope the reader rejects, so both ends agree on
// the previous header. On a stream that is not compact, an array of fewer
// than six fields is malformed, as it always was.
//
// # Message bodies and the registry
//
// The body is the CBOR encoding of a Go value of a registered type. Each
// node creates a Registry (NewRegistry, with a few built-in types) and
// registers its message types under stable names with Register. Encoding
// an unregistered type fails; decoding a body whose type name is unknown
// yields a Raw holding the name and the body, which can also be sent as is.
// Bodies are encoded with one cbor.EncMode and decoded with one cbor.DecMode
// built per Registry: times as RFC 3339 text in UTC with nanoseconds, under
// tag 0 (the instant is exact; the time zone is not kept), floats in their
// shortest exact form, structs as maps keyed by field name (or by the key
// given in a cbor struct tag). Before decoding, a body is checked for well
// formedness and against the Registry's Limits (nesting depth, array and map
// sizes, byte and text string lengths) without allocating; the decoder then
// rejects duplicate map keys and invalid UTF-8.
//
// Plain structs (exported fields of kinds bool, integer, string and
// []byte) take a fast path that encodes and decodes them without
// reflection, producing the same bytes. It relies on package unsafe and on
// the runtime's layout of interface values; built with the tag nounsafe,
// the codec leaves it out and uses no unsafe at all, at a cost in speed
// only.
//
// # Schema evolution
//
// Envelope: new fields are only ever appended at index 6 and beyond, and
// are optional. A decoder requires at least the six fields above, checks
// any extra ones for well formedness and skips them; arrays of up to 32
// fields are accepted. Field indices and kind values never change meaning.
//
// Messages: a struct is encoded as a map whose keys are its field names (or
// the names or integer keys given in `cbor:"..."` tags). A decoder ignores
// keys it does not know and leaves fields that are absent at their zero
// value, so a struct may gain or lose fields and old and new peers still
// understand each other. The keys are the contract: renaming a field breaks
// compatibility unless a tag keeps the old key, and a field's type must not
// change incompatibly. Structs tagged `cbor:",toarray"` (such as Ref) cannot
// evolve this way and are reserved for fixed layouts. Type names given to
// Register are likewise part of the wire format.
//
// # Errors
//
// Every failure caused by input from the network wraps one of
// ErrMalformed, ErrFrameTooLarge or ErrUnknownKind; no input makes the codec
// panic. After ErrMalformed or ErrUnknownKind from decoding an envelope, the
// frame has been consumed and the stream can still be read. After
// ErrFrameTooLarge, an invalid length prefix, a stream that ends inside a
// frame or a read error, FrameReader.Err reports the stream as broken and
// it must be reset. See FrameReader for details.
//
// # Concurrency
//
// Registry and the functions AppendEnvelope and DecodeEnvelope are safe for
// concurrent use. FrameReader and FrameWriter are not: each is owned by the
// one goroutine that reads or writes its stream.
//
// # Files
//
//	envelope.go, envelope_decode.go  envelopes: encoding, decoding
//	compact.go                       short envelopes of compact streams
//	registry.go, message.go          the type registry; messages
//	fast.go, fast_decode.go,
//	fast_codec.go                    the fast path for plain structs
//	fast_safe.go                     no fast path (-tags nounsafe)
//	layout_unsafe.go, layout_safe.go the runtime's interface layout, in one place
//	frame_reader*.go, frame_writer.go length-prefixed frames on a stream
//	stream_cache.go                  a stream's cache of decoded names and bytes
//	scan.go, head.go                 CBOR well-formedness and heads
//	limits.go, errors.go             decode limits; errors
//	ref.go                           actor references on the wire
package codec
