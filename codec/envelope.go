package codec

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// Kind says what an envelope carries: a user message, a system message
// (monitor, down, lookup, spawn), or a reply to a request. Its wire value is
// stable.
type Kind uint8

// Envelope kinds. The zero Kind is invalid on the wire.
const (
	// KindUser marks an envelope carrying a user message.
	KindUser Kind = 1
	// KindSystem marks an envelope carrying a system message.
	KindSystem Kind = 2
	// KindReply marks an envelope answering the request whose correlation
	// ID it carries in Corr; the receiver matches it only against that
	// request, never against ordinary receives.
	KindReply Kind = 3
)

// String returns "user", "system", "reply" or "kind(N)".
func (k Kind) String() string {
	switch k {
	case KindUser:
		return "user"
	case KindSystem:
		return "system"
	case KindReply:
		return "reply"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Valid reports whether k is KindUser, KindSystem or KindReply.
func (k Kind) Valid() bool { return k == KindUser || k == KindSystem || k == KindReply }

// Fixed limits on envelope fields, checked by both the encoder and the
// decoder.
const (
	// MaxNameLen is the maximum length in bytes of To, FromName and Type.
	MaxNameLen = 1024
	// MaxPeerIDLen is the maximum length in bytes of FromPeer. A libp2p
	// peer ID is 38 bytes for Ed25519 keys.
	MaxPeerIDLen = 128
)

// Envelope field indices in the wire array. They are stable: new fields are
// only ever appended after fieldCorr.
const (
	fieldKind = iota
	fieldTo
	fieldFrom
	fieldType
	fieldBody
	fieldCorr
	envelopeFields // number of fields this version writes and requires
)

// maxShortFields is the most fields of a short envelope, which only
// compact streams carry (see the package documentation): [body] or
// [body, corr].
const maxShortFields = 2

// maxEnvelopeFields bounds the array length a decoder accepts: fields this
// version does not know (appended by a newer peer) are checked and skipped.
const maxEnvelopeFields = 32

// extensionLimits bounds the contents of unknown trailing envelope fields.
var extensionLimits = Limits{
	MaxDepth:         16,
	MaxArrayElements: 1024,
	MaxMapPairs:      1024,
	MaxStringLen:     MaxFrameLimit,
}

// Envelope is one message on the wire: who it is for, who sent it, the
// registered name of its type and its CBOR-encoded body. An Envelope is a
// plain value; it is not safe for concurrent mutation.
type Envelope struct {
	// Kind says what the envelope carries. It must be KindUser, KindSystem
	// or KindReply.
	Kind Kind
	// To is the name of the target actor on the receiving peer.
	To string
	// FromPeer is the sender's peer ID bytes. It may be empty. Routing
	// leaves it empty (about 40 bytes less per message) and never reads
	// it: the sender's peer is the remote peer of the stream the frame
	// came on, which its connection authenticated.
	FromPeer []byte
	// FromName is the sender actor's name. It may be empty (no sender).
	FromName string
	// Type is the registered name of the body's type.
	Type string
	// Body is the CBOR encoding of the message, as produced by
	// Registry.Encode. The envelope codec treats it as opaque bytes;
	// Registry.Decode validates it.
	Body []byte
	// Corr is a correlation ID matching replies to requests; 0 means none.
	Corr uint64
}

// From returns the sender as a Ref.
func (e *Envelope) From() Ref { return Ref{Peer: e.FromPeer, Name: e.FromName} }

// EnvelopeSize validates e and returns the length of its encoding as a
// full envelope: the payload of the frame a FrameWriter writes for it
// (a short envelope on a compact stream is smaller), which WriteEnvelope
// compares with the maximum frame.
func EnvelopeSize(e *Envelope) (int, error) { return envelopeSize(e, len(e.Body), nil) }

// EnvelopeSizeWithBody is EnvelopeSize for e carrying a body of bodyLen
// bytes instead of e.Body (see Registry.BodySize).
func EnvelopeSizeWithBody(e *Envelope, bodyLen int) (int, error) {
	return envelopeSize(e, bodyLen, nil)
}

// envelopeSize validates e and returns the length of its encoding with a
// body of bodyLen bytes. valid, if not nil, holds names known to be valid,
// which are not checked again; the names of e are stored there once
// checked.
func envelopeSize(e *Envelope, bodyLen int, valid *validNames) (int, error) {
	if !e.Kind.Valid() {
		return 0, fmt.Errorf("%w: encoding envelope with %v", ErrUnknownKind, e.Kind)
	}
	if valid == nil || e.To != valid.to || e.FromName != valid.from || e.Type != valid.typ {
		if err := checkName("to", e.To); err != nil {
			return 0, err
		}
		if err := checkName("from name", e.FromName); err != nil {
			return 0, err
		}
		if err := checkName("type", e.Type); err != nil {
			return 0, err
		}
		if valid != nil {
			*valid = validNames{e.To, e.FromName, e.Type}
		}
	}
	if len(e.FromPeer) > MaxPeerIDLen {
		return 0, fmt.Errorf("%w: from peer ID of %d bytes exceeds limit of %d", ErrMalformed, len(e.FromPeer), MaxPeerIDLen)
	}
	n := 1 + 1 + // array head, kind
		headLen(uint64(len(e.To))) + len(e.To) +
		1 + // from: array(2)
		headLen(uint64(len(e.FromPeer))) + len(e.FromPeer) +
		headLen(uint64(len(e.FromName))) + len(e.FromName) +
		headLen(uint64(len(e.Type))) + len(e.Type) +
		headLen(uint64(bodyLen)) + bodyLen +
		headLen(e.Corr)
	return n, nil
}

// validNames are the names of an envelope that passed checkName.
type validNames struct {
	to, from, typ string
}

// checkName reports whether s may be used as an envelope name.
func checkName(field, s string) error {
	if len(s) > MaxNameLen {
		return fmt.Errorf("%w: %s of %d bytes exceeds limit of %d", ErrMalformed, field, len(s), MaxNameLen)
	}
	if !isASCIIString(s) && !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrMalformed, field)
	}
	return nil
}

// isASCIIString reports whether s holds only ASCII bytes.
func isASCIIString(s string) bool {
	var or byte
	for i := 0; i < len(s); i++ {
		or |= s[i]
	}
	return or < 0x80
}

// appendEnvelope appends the encoding of e, whose size n was computed and
// validated by envelopeSize.
func appendEnvelope(dst []byte, e *Envelope, n int) []byte {
	off := len(dst)
	dst = slices.Grow(dst, n)[:off+n]
	b := dst[off:]
	b[0], b[1] = majorArray<<5|envelopeFields, byte(e.Kind)
	i := 2
	i += putHead(b[i:], majorText, uint64(len(e.To)))
	i += copy(b[i:], e.To)
	b[i] = majorArray<<5 | 2
	i++
	i += putHead(b[i:], majorBytes, uint64(len(e.FromPeer)))
	i += copy(b[i:], e.FromPeer)
	i += putHead(b[i:], majorText, uint64(len(e.FromName)))
	i += copy(b[i:], e.FromName)
	i += putHead(b[i:], majorText, uint64(len(e.Type)))
	i += copy(b[i:], e.Type)
	i += putHead(b[i:], majorBytes, uint64(len(e.Body)))
	i += copy(b[i:], e.Body)
	putHead(b[i:], majorUint, e.Corr)
	return dst
}

// AppendEnvelope appends the CBOR encoding of e to dst and returns the
// extended slice. It fails, leaving dst unchanged, if e.Kind is not valid
// (ErrUnknownKind) or a name or the peer ID is too long or a name is not
// valid UTF-8 (ErrMalformed). The body is copied as is. Safe for concurrent
// use as long as e is not being modified.
func AppendEnvelope(dst []byte, e *Envelope) ([]byte, error) {
	n, err := EnvelopeSize(e)
	if err != nil {
		return dst, err
	}
	return appendEnvelope(dst, e, n), nil
}
