package codec

import (
	"fmt"
	"reflect"
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
		if raw.Type == "" {
			return "", nil, fmt.Errorf("%w: Raw with an empty type name", ErrMalformed)
		}
		if err := checkName("type", raw.Type); err != nil {
			return "", nil, err
		}
		if err := checkWellFormed(raw.Body, &r.lim); err != nil {
			return "", nil, fmt.Errorf("%w (body of Raw %q)", err, raw.Type)
		}
		return raw.Type, raw.Body, nil
	}
	t := reflect.TypeOf(v)
	e, ok := r.tab.Load().byType[t]
	if !ok {
		if t == nil {
			return "", nil, fmt.Errorf("%w: nil", ErrUnregistered)
		}
		return "", nil, fmt.Errorf("%w: %v", ErrUnregistered, t)
	}
	body, err = r.enc.Marshal(v)
	if err != nil {
		return "", nil, fmt.Errorf("%w: encoding %q (%v): %w", ErrMalformed, e.name, t, err)
	}
	// Refuse to send what a peer with the same limits would reject, such
	// as a string that is not valid UTF-8 or one over MaxStringLen.
	if err := checkWellFormed(body, &r.lim); err != nil {
		return "", nil, fmt.Errorf("%w (encoding %q from %v)", err, e.name, t)
	}
	return e.name, body, nil
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
	if err := checkWellFormed(body, &r.lim); err != nil {
		return nil, fmt.Errorf("%w (body of %q)", err, typeName)
	}
	e, ok := r.tab.Load().byName[typeName]
	if !ok {
		return Raw{Type: typeName, Body: body}, nil
	}
	v, err := e.decode(r.dec, body)
	if err != nil {
		return nil, fmt.Errorf("%w: decoding %q into %v: %w", ErrMalformed, typeName, e.typ, err)
	}
	return v, nil
}
