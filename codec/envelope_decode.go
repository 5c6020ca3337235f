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
	if r.off < len(r.data) {
		b := r.data[r.off]
		if b>>5 == want {
			switch ai := b & 0x1f; {
			case ai < aiOneByte:
				r.off++
				return uint64(ai), nil
			case ai == aiOneByte && r.off+1 < len(r.data):
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
	var f envFields
	if c == nil || !f.parseSmall(data) {
		if err := f.parse(data); err != nil {
			return err
		}
	}
	return f.finish(data, e, c, aliasBody)
}

// envFields are the offsets of an envelope's fields in its encoding, as
// parsed and checked by envFields.parse.
type envFields struct {
	kind, corr   uint64
	toH          int // start of the head of To: names run from here to typeE
	toB, toE     int
	peerB, peerE int
	nameB, nameE int
	typeB, typeE int
	bodyB, bodyE int
}

// parseSmall parses the full envelope layout that writers produce for
// small messages: six fields, kind and names with heads of at most two bytes, a
// body of less than 64 KiB. It reports false, having checked nothing,
// for anything else, which parse then handles (and rejects, if it must):
// what parseSmall accepts, parse accepts with the same result.
func (f *envFields) parseSmall(d []byte) bool {
	if len(d) < 11 || d[0] != majorArray<<5|envelopeFields || d[1] >= aiOneByte {
		return false
	}
	f.kind = uint64(d[1])
	i, ok := 2, false
	f.toH = i
	if f.toB, f.toE, i, ok = shortString(d, i, majorText); !ok || i >= len(d) || d[i] != majorArray<<5|2 {
		return false
	}
	if f.peerB, f.peerE, i, ok = shortString(d, i+1, majorBytes); !ok || f.peerE-f.peerB > MaxPeerIDLen {
		return false
	}
	if f.nameB, f.nameE, i, ok = shortString(d, i, majorText); !ok {
		return false
	}
	if f.typeB, f.typeE, i, ok = shortString(d, i, majorText); !ok || i+1 >= len(d) {
		return false
	}
	// The body: a byte string with a head of up to three bytes.
	switch b := d[i]; {
	case b>>5 != majorBytes:
		return false
	case b&0x1f < aiOneByte:
		f.bodyB, f.bodyE = i+1, i+1+int(b&0x1f)
	case b&0x1f == aiOneByte:
		f.bodyB = i + 2
		f.bodyE = f.bodyB + int(d[i+1])
	case b&0x1f == aiTwoBytes && i+2 < len(d):
		f.bodyB = i + 3
		f.bodyE = f.bodyB + (int(d[i+1])<<8 | int(d[i+2]))
	default:
		return false
	}
	// The correlation ID ends the envelope.
	i = f.bodyE
	if i >= len(d) || d[i]>>5 != majorUint {
		return false
	}
	switch ai := d[i] & 0x1f; {
	case ai < aiOneByte:
		f.corr, i = uint64(ai), i+1
	case ai <= aiEightBytes:
		n := 1 << (ai - aiOneByte)
		if len(d)-(i+1) < n {
			return false
		}
		var v uint64
		for _, b := range d[i+1 : i+1+n] {
			v = v<<8 | uint64(b)
		}
		f.corr, i = v, i+1+n
	default:
		return false
	}
	return i == len(d)
}

// shortString reads a definite string of the major type whose head is at
// most two bytes long, at d[i:], returning its payload's offsets and the
// offset after it.
func shortString(d []byte, i int, major byte) (b, e, next int, ok bool) {
	if i >= len(d) || d[i]>>5 != major {
		return 0, 0, 0, false
	}
	switch ai := int(d[i] & 0x1f); {
	case ai < aiOneByte:
		b, e = i+1, i+1+ai
	case ai == aiOneByte && i+1 < len(d):
		b = i + 2
		e = b + int(d[i+1])
	default:
		return 0, 0, 0, false
	}
	if e > len(d) {
		return 0, 0, 0, false
	}
	return b, e, e, true
}

// parse parses and checks any envelope layout.
func (f *envFields) parse(data []byte) error {
	r := envReader{data: data}
	n, err := r.head(majorArray, "array")
	if err != nil {
		return err
	}
	if n < envelopeFields || n > maxEnvelopeFields {
		return fmt.Errorf("%w: envelope has %d fields, want %d..%d", ErrMalformed, n, envelopeFields, maxEnvelopeFields)
	}
	if f.kind, err = r.head(majorUint, "kind"); err != nil {
		return err
	}
	f.toH = r.off
	if f.toB, f.toE, err = r.str(majorText, "to", MaxNameLen); err != nil {
		return err
	}
	refLen, err := r.head(majorArray, "from")
	if err != nil {
		return err
	}
	if refLen != 2 {
		return fmt.Errorf("%w: envelope from has %d fields, want 2", ErrMalformed, refLen)
	}
	if f.peerB, f.peerE, err = r.str(majorBytes, "from peer", MaxPeerIDLen); err != nil {
		return err
	}
	if f.nameB, f.nameE, err = r.str(majorText, "from name", MaxNameLen); err != nil {
		return err
	}
	if f.typeB, f.typeE, err = r.str(majorText, "type", MaxNameLen); err != nil {
		return err
	}
	if f.bodyB, f.bodyE, err = r.str(majorBytes, "body", MaxFrameLimit); err != nil {
		return err
	}
	if f.corr, err = r.head(majorUint, "corr"); err != nil {
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
	return nil
}

// finish checks the names of the parsed envelope and writes it to e.
func (f *envFields) finish(data []byte, e *Envelope, c *streamCache, aliasBody bool) error {
	to, name, typ := data[f.toB:f.toE], data[f.nameB:f.nameE], data[f.typeB:f.typeE]
	// The encoding from To's head to the end of Type determines the three
	// names: when it repeats the previous envelope's, so do they.
	names := data[f.toH:f.typeE]
	sameNames := c != nil && c.names.sameEncoding(names)
	if !sameNames {
		if err := checkUTF8(to, name, typ); err != nil {
			return err
		}
	}

	// Write *e only now, each field once: cheaper than zeroing it first.
	outPeer, outBody := carve(c, data[f.peerB:f.peerE], data[f.bodyB:f.bodyE], aliasBody)
	outKind := Kind(0)
	if f.kind <= 0xff {
		outKind = Kind(f.kind)
	}
	switch {
	case sameNames:
		setString(&e.To, c.names.lastTo)
		setString(&e.FromName, c.names.lastName)
		setString(&e.Type, c.names.lastType)
	case c != nil:
		e.To, e.FromName, e.Type = c.names.lookup(names, to, name, typ)
	default:
		e.To, e.FromName, e.Type = joinStrings(to, name, typ)
	}
	setBytes(&e.FromPeer, outPeer)
	e.Kind, e.Body, e.Corr = outKind, outBody, f.corr
	if !outKind.Valid() {
		return fmt.Errorf("%w: %d", ErrUnknownKind, f.kind)
	}
	return nil
}

// carve returns copies of peer and body for a decoded envelope, in one
// allocation (from c if not nil), or with aliasBody body itself. Empty
// slices come back nil.
func carve(c *streamCache, peer, body []byte, aliasBody bool) (outPeer, outBody []byte) {
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
	return outPeer, outBody
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
