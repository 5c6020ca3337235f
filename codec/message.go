package codec

import (
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// Encode returns the registered name of v's type and v's CBOR encoding. v
// must be a value of a registered type (a pointer to one is not accepted, so
// that remote delivery matches local delivery by type), or a Raw, whose Type
// and Body are passed through after checking that Type is a valid name and
// Body one well-formed CBOR data item within r's limits. The returned body of
// a Raw is its Body, not a copy.
//
// The encoding is checked against r's limits and for valid UTF-8, so that
// Encode fails rather than produce a body the receiver would reject. Errors
// wrap ErrUnregistered (naming the type) or ErrMalformed. Safe for
// concurrent use.
func (r *Registry) Encode(v any) (typeName string, body []byte, err error) {
	if raw, ok := v.(Raw); ok {
		if err := checkRaw(raw, &r.lim); err != nil {
			return "", nil, err
		}
		return raw.Type, raw.Body, nil
	}
	return r.AppendEncode(make([]byte, 0, 64), v)
}

// AppendEncode is like Encode but appends the body to dst and returns the
// extended slice; on error it returns dst unchanged. A Raw's body is
// copied. Encoding into a reused buffer this way costs no allocation for
// plain structs (exported fields of kinds bool, integer, string and
// []byte), which are encoded without reflection. Safe for concurrent use.
func (r *Registry) AppendEncode(dst []byte, v any) (typeName string, out []byte, err error) {
	e := r.encEntry(v)
	if e == nil {
		if raw, ok := v.(Raw); ok {
			if err := checkRaw(raw, &r.lim); err != nil {
				return "", dst, err
			}
			return raw.Type, append(dst, raw.Body...), nil
		}
		if t := reflect.TypeOf(v); t != nil {
			return "", dst, fmt.Errorf("%w: %v", ErrUnregistered, t)
		}
		return "", dst, fmt.Errorf("%w: nil", ErrUnregistered)
	}
	if e.fast != nil {
		if out, ok := e.fast.encode(dst, v); ok {
			return e.name, out, nil
		}
		// A value the general path reports, such as invalid UTF-8.
	}
	body, err := marshalSafe(r.enc, v)
	if err != nil {
		return "", dst, fmt.Errorf("%w: encoding %q (%v): %w", ErrMalformed, e.name, e.typ, err)
	}
	// Refuse to send what a peer with the same limits would reject, such
	// as a string that is not valid UTF-8 or one over MaxStringLen.
	if err := checkWellFormed(body, &r.lim); err != nil {
		return "", dst, fmt.Errorf("%w (encoding %q from %v)", err, e.name, e.typ)
	}
	if len(dst) == 0 {
		return e.name, body, nil
	}
	return e.name, append(dst, body...), nil
}

// BodySize returns the type name and the body length that AppendEncode
// would return for v, without encoding it, when v is a value of a
// registered plain struct type (see AppendEncode) that encodes without
// error. Otherwise ok is false and AppendEncode tells the body or the
// error. Safe for concurrent use.
func (r *Registry) BodySize(v any) (typeName string, n int, ok bool) {
	if e := r.encEntry(v); e != nil && e.fast != nil {
		if n, ok := e.fast.size(v); ok {
			return e.name, n, true
		}
	}
	return "", 0, false
}

// encEntry returns the registration of v's type, nil if there is none.
// Most messages have the type of the one before them, whose registration
// is looked up first. (Raw cannot be registered: a Raw has none.)
func (r *Registry) encEntry(v any) *entry {
	if e := r.lastEnc.Load(); e != nil && e.word == typeWordIn(v) {
		return e
	}
	e, ok := r.tab.Load().byType[reflect.TypeOf(v)]
	if !ok {
		return nil
	}
	r.lastEnc.Store(e)
	return e
}

// checkRaw reports whether raw may be sent.
func checkRaw(raw Raw, lim *Limits) error {
	if raw.Type == "" {
		return fmt.Errorf("%w: Raw with an empty type name", ErrMalformed)
	}
	if err := checkName("type", raw.Type); err != nil {
		return err
	}
	if err := checkWellFormed(raw.Body, lim); err != nil {
		return fmt.Errorf("%w (body of Raw %q)", err, raw.Type)
	}
	return nil
}

// Decode decodes body, the encoding of a message whose type is registered
// as typeName, and returns it as a value of the registered Go type (not a
// pointer). If typeName is not registered it returns a Raw holding typeName
// and body, which aliases the body argument.
//
// The body must be exactly one well-formed CBOR data item within r's limits
// (nesting depth, array and map sizes, string lengths) with only valid UTF-8
// in text strings. For a registered type it must also match the type's
// shape and have no duplicate map keys; a Raw's body is not checked for
// duplicate keys, which its eventual decoder rejects. Unknown struct fields are ignored and missing
// ones left zero (see the package documentation on schema evolution). Every
// error wraps ErrMalformed. Safe for concurrent use.
func (r *Registry) Decode(typeName string, body []byte) (any, error) {
	return r.decode(typeName, body, nil, false)
}

// decode is Decode. With a streamCache, byte strings are carved from its
// blocks; with copyRaw, the body of a Raw is copied (into c's blocks when
// c is not nil) rather than aliased.
func (r *Registry) decode(typeName string, body []byte, c *streamCache, copyRaw bool) (any, error) {
	var e *entry
	var ok bool
	if tab := r.tab.Load(); c != nil && c.lastTab == tab && c.lastEntry != nil && c.lastEntry.name == typeName {
		e, ok = c.lastEntry, true // as the previous message on the stream
	} else if e, ok = tab.byName[typeName]; ok && c != nil {
		c.lastTab, c.lastEntry = tab, e
	}
	if ok && e.fast != nil {
		// The fast path checks everything checkWellFormed would, for the
		// strict form it accepts, and leaves the rest to the general path.
		if v, ok := e.fast.decode(body, c); ok {
			return v, nil
		}
	}
	if err := checkWellFormed(body, &r.lim); err != nil {
		return nil, fmt.Errorf("%w (body of %q)", err, typeName)
	}
	if !ok {
		if copyRaw {
			var b []byte
			if c != nil {
				b = c.bytes(len(body))
			} else {
				b = make([]byte, len(body))
			}
			copy(b, body)
			body = b
		}
		return Raw{Type: typeName, Body: body}, nil
	}
	v, err := decodeSafe(e, r.dec, body)
	if err != nil {
		return nil, fmt.Errorf("%w: decoding %q into %v: %w", ErrMalformed, typeName, e.typ, err)
	}
	return v, nil
}

// marshalSafe is enc.Marshal(v), with a panic in the value's own
// MarshalCBOR returned as an error: one bad message must not take down the
// goroutine that encodes the others.
func marshalSafe(enc cbor.EncMode, v any) (body []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the encoder panicked: %v", p)
		}
	}()
	return enc.Marshal(v)
}

// decodeSafe is e.decode(dec, body), with a panic in the type's own
// UnmarshalCBOR returned as an error: bytes from a peer must not take down
// the goroutine that reads its stream.
func decodeSafe(e *entry, dec cbor.DecMode, body []byte) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("the decoder panicked: %v", p)
		}
	}()
	return e.decode(dec, body)
}
