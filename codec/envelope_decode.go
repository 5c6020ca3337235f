package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// envReader walks an envelope. Its methods return byte ranges into data so
// that the decoder can copy all strings with a single allocation.
type envReader struct {
	data []byte
	off  int
}

// head reads a definite-length head of the wanted major type for field.
func (r *envReader) head(want byte, field string) (uint64, error) {
	// Fast path: an argument in the initial byte or in one more byte.
	if r.off+1 < len(r.data) {
		b := r.data[r.off]
		if b>>5 == want {
			switch ai := b & 0x1f; {
			case ai < aiOneByte:
				r.off++
				return uint64(ai), nil
			case ai == aiOneByte:
				arg := r.data[r.off+1]
				r.off += 2
				return uint64(arg), nil
			}
		}
	}
	return r.headSlow(want, field)
}

// headSlow is head for the general case and for errors.
func (r *envReader) headSlow(want byte, field string) (uint64, error) {
	start := r.off
	major, ai, arg, next, err := readHead(r.data, r.off)
	if err != nil {
		return 0, fmt.Errorf("%w (envelope %s)", err, field)
	}
	if major != want {
		return 0, fmt.Errorf("%w: envelope %s: want %s, got %s at offset %d",
			ErrMalformed, field, majorNames[want], majorNames[major], start)
	}
	if ai == aiIndefinite {
		return 0, fmt.Errorf("%w: envelope %s: indefinite length at offset %d", ErrMalformed, field, start)
	}
	r.off = next
	return arg, nil
}

// str reads a definite-length byte or text string of at most limit bytes and
// returns its payload's offsets.
func (r *envReader) str(major byte, field string, limit int) (int, int, error) {
	start := r.off
	n, err := r.head(major, field)
	if err != nil {
		return 0, 0, err
	}
	if n > uint64(limit) {
		return 0, 0, fmt.Errorf("%w: envelope %s of %d bytes exceeds limit of %d at offset %d",
			ErrMalformed, field, n, limit, start)
	}
	if n > uint64(len(r.data)-r.off) {
		return 0, 0, fmt.Errorf("%w: envelope %s: truncated at offset %d", ErrMalformed, field, start)
	}
	b := r.off
	r.off += int(n)
	return b, r.off, nil
}

// DecodeEnvelope decodes one envelope that must fill data exactly. It checks
// the array layout, field types, name lengths and UTF-8, and skips (after
// checking them) fields appended by newer versions. It does not look inside
// the body: Registry.Decode does.
//
// The decoded strings and byte slices are copies; e does not alias data.
// Decoding costs two allocations: one for the three strings and one for the
// peer ID and body together.
//
// Errors wrap ErrMalformed, except that an envelope that is well formed but
// has a kind other than KindUser, KindSystem and KindReply is fully decoded into e and
// reported with ErrUnknownKind; e.Kind then holds the received value, or 0
// if it does not fit in a Kind. On ErrMalformed e is left zeroed. Safe for
// concurrent use on distinct envelopes.
func DecodeEnvelope(data []byte, e *Envelope) error {
	return decodeEnvelope(data, e, nil)
}

// decodeEnvelope is DecodeEnvelope with an optional streamCache, which
// spares the string allocation when all three names were seen recently and
// carves small peer IDs and bodies from shared blocks.
func decodeEnvelope(data []byte, e *Envelope, c *streamCache) error {
	err := parseEnvelope(data, e, c, false)
	if err != nil && !errors.Is(err, ErrUnknownKind) {
		*e = Envelope{}
	}
	return err
}

// parseEnvelope does the work of decodeEnvelope. It writes e only once the
// envelope has been checked. With aliasBody, e.Body is not copied: it
// aliases data.
func parseEnvelope(data []byte, e *Envelope, c *streamCache, aliasBody bool) error {
	r := envReader{data: data}
	n, err := r.head(majorArray, "array")
	if err != nil {
		return err
	}
	if n < envelopeFields || n > maxEnvelopeFields {
		return fmt.Errorf("%w: envelope has %d fields, want %d..%d", ErrMalformed, n, envelopeFields, maxEnvelopeFields)
	}
	kind, err := r.head(majorUint, "kind")
	if err != nil {
		return err
	}
	toB, toE, err := r.str(majorText, "to", MaxNameLen)
	if err != nil {
		return err
	}
	refLen, err := r.head(majorArray, "from")
	if err != nil {
		return err
	}
	if refLen != 2 {
		return fmt.Errorf("%w: envelope from has %d fields, want 2", ErrMalformed, refLen)
	}
	peerB, peerE, err := r.str(majorBytes, "from peer", MaxPeerIDLen)
	if err != nil {
		return err
	}
	nameB, nameE, err := r.str(majorText, "from name", MaxNameLen)
	if err != nil {
		return err
	}
	typeB, typeE, err := r.str(majorText, "type", MaxNameLen)
	if err != nil {
		return err
	}
	bodyB, bodyE, err := r.str(majorBytes, "body", MaxFrameLimit)
	if err != nil {
		return err
	}
	corr, err := r.head(majorUint, "corr")
	if err != nil {
		return err
	}
	if n > envelopeFields {
		s := scanner{data: data, off: r.off, lim: &extensionLimits}
		for i := uint64(envelopeFields); i < n; i++ {
			if err := s.item(1); err != nil {
				return fmt.Errorf("%w (envelope field %d)", err, i)
			}
		}
		r.off = s.off
	}
	if r.off != len(data) {
		return fmt.Errorf("%w: %d trailing bytes after envelope", ErrMalformed, len(data)-r.off)
	}
	to, name, typ := data[toB:toE], data[nameB:nameE], data[typeB:typeE]
	sameNames := c != nil && c.names.same(to, name, typ)
	if !sameNames {
		if err := checkUTF8(to, name, typ); err != nil {
			return err
		}
	}

	// Write *e only now, each field once: cheaper than zeroing it first.
	var outBody, outPeer []byte
	peer, body := data[peerB:peerE], data[bodyB:bodyE]
	if aliasBody {
		if len(body) > 0 {
			outBody = body
		}
		body = nil
	}
	if nb := len(peer) + len(body); nb > 0 {
		var buf []byte
		if c != nil {
			buf = c.bytes(nb)
		} else {
			buf = make([]byte, nb)
		}
		copy(buf, body)
		copy(buf[len(body):], peer)
		if len(body) > 0 {
			outBody = buf[:len(body):len(body)]
		}
		if len(peer) > 0 {
			outPeer = buf[len(body):nb:nb]
		}
	}
	outKind := Kind(0)
	if kind <= 0xff {
		outKind = Kind(kind)
	}
	switch {
	case sameNames:
		e.To, e.FromName, e.Type = c.names.lastTo, c.names.lastName, c.names.lastType
	case c != nil:
		e.To, e.FromName, e.Type = c.names.lookup(to, name, typ)
	default:
		e.To, e.FromName, e.Type = joinStrings(to, name, typ)
	}
	e.Kind, e.FromPeer, e.Body, e.Corr = outKind, outPeer, outBody, corr
	if !outKind.Valid() {
		return fmt.Errorf("%w: %d", ErrUnknownKind, kind)
	}
	return nil
}

// checkUTF8 reports an error unless the three names are valid UTF-8.
func checkUTF8(to, name, typ []byte) error {
	if isASCII(to) && isASCII(name) && isASCII(typ) {
		return nil
	}
	field := ""
	switch {
	case !utf8.Valid(to):
		field = "to"
	case !utf8.Valid(name):
		field = "from name"
	case !utf8.Valid(typ):
		field = "type"
	default:
		return nil
	}
	return fmt.Errorf("%w: envelope %s is not valid UTF-8", ErrMalformed, field)
}

// isASCII reports whether b holds only ASCII bytes.
func isASCII(b []byte) bool {
	var or uint64
	for len(b) >= 8 {
		or |= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		or |= uint64(c)
	}
	return or&0x8080808080808080 == 0
}

// joinStrings converts three byte slices to strings with one allocation.
func joinStrings(a, b, c []byte) (string, string, string) {
	total := len(a) + len(b) + len(c)
	if total == 0 {
		return "", "", ""
	}
	var stack [256]byte
	tmp := stack[:0]
	if total > len(stack) {
		tmp = make([]byte, 0, total)
	}
	tmp = append(tmp, a...)
	tmp = append(tmp, b...)
	tmp = append(tmp, c...)
	s := string(tmp)
	i, j := len(a), len(a)+len(b)
	return s[:i], s[i:j], s[j:]
}
