package codec

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// Registry maps stable type names to Go types and encodes and decodes
// message bodies. Each node creates its own Registry with NewRegistry and
// registers its message types at startup with Register; there is no
// package-level registry.
//
// All methods are safe for concurrent use. Lookups are lock-free; Register
// copies the tables, so registering is meant for startup, not the hot path.
type Registry struct {
	lim Limits
	enc cbor.EncMode
	dec cbor.DecMode

	mu  sync.Mutex // serializes Register; readers use tab without it
	tab atomic.Pointer[table]

	// lastEnc is the entry AppendEncode used last: most messages have the
	// type of the one before. Entries never change once registered.
	lastEnc atomic.Pointer[entry]
}

// table is an immutable snapshot of the registrations.
type table struct {
	byName map[string]*entry
	byType map[reflect.Type]*entry
}

// entry is one registered type.
type entry struct {
	name   string
	typ    reflect.Type
	word   typeWord // the type word of interface values holding a typ
	decode func(dm cbor.DecMode, body []byte) (any, error)
	fast   *fastCodec // nil: the type always takes the general path
}

// Option configures a Registry.
type Option func(*config) error

// config holds the settings Options change.
type config struct {
	limits   Limits
	builtins bool
}

// defaultConfig returns the settings NewRegistry uses without options.
func defaultConfig() config {
	return config{limits: DefaultLimits(), builtins: true}
}

// WithLimits sets the decode limits applied to message bodies. It fails with
// ErrInvalidLimits if a field is out of range.
func WithLimits(l Limits) Option {
	return func(c *config) error {
		if err := l.validate(); err != nil {
			return err
		}
		c.limits = l
		return nil
	}
}

// WithoutBuiltins leaves out the built-in registrations (see NewRegistry).
func WithoutBuiltins() Option {
	return func(c *config) error {
		c.builtins = false
		return nil
	}
}

// NewRegistry returns a Registry with DefaultLimits and these built-in types
// registered, unless WithoutBuiltins is given:
//
//	"string"     string
//	"bytes"      []byte
//	"bool"       bool
//	"int"        int
//	"int64"      int64
//	"uint64"     uint64
//	"float64"    float64
//	"troupe.Ref" Ref
//
// Names starting with "troupe." are reserved for types defined by Troupe
// itself (built-ins and the system messages registered by routing).
func NewRegistry(opts ...Option) (*Registry, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	enc, err := cbor.EncOptions{
		Time:          cbor.TimeRFC3339NanoUTC,
		TimeTag:       cbor.EncTagRequired,
		ShortestFloat: cbor.ShortestFloat16,
		IndefLength:   cbor.IndefLengthForbidden,
	}.EncMode()
	if err != nil {
		return nil, fmt.Errorf("codec: building encoding mode: %w", err)
	}
	dec, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:  cfg.limits.MaxDepth,
		MaxArrayElements: cfg.limits.MaxArrayElements,
		MaxMapPairs:      cfg.limits.MaxMapPairs,
		UTF8:             cbor.UTF8RejectInvalid,
		IndefLength:      cbor.IndefLengthAllowed,
	}.DecMode()
	if err != nil {
		return nil, fmt.Errorf("codec: building decoding mode: %w", err)
	}
	r := &Registry{lim: cfg.limits, enc: enc, dec: dec}
	r.tab.Store(&table{byName: map[string]*entry{}, byType: map[reflect.Type]*entry{}})
	if cfg.builtins {
		MustRegister[string](r, "string")
		MustRegister[[]byte](r, "bytes")
		MustRegister[bool](r, "bool")
		MustRegister[int](r, "int")
		MustRegister[int64](r, "int64")
		MustRegister[uint64](r, "uint64")
		MustRegister[float64](r, "float64")
		MustRegister[Ref](r, "troupe.Ref")
	}
	return r, nil
}

// rawType is the reflect.Type of Raw, which cannot be registered.
var rawType = reflect.TypeFor[Raw]()

// Register maps name to the Go type T in r. Values of type T are then
// encoded with that name, and bodies with that name decode to a T (a value,
// not a pointer). The name is part of the wire format: keep it stable.
//
// It fails with ErrDuplicate if the name or the type is already registered,
// and with ErrInvalidRegistration if the name is empty, longer than
// MaxNameLen or not valid UTF-8, or if T is an interface, pointer, channel,
// function or Raw, or cannot be encoded as CBOR. Safe for concurrent use.
func Register[T any](r *Registry, name string) error {
	t := reflect.TypeFor[T]()
	if name == "" || len(name) > MaxNameLen || !utf8.ValidString(name) {
		return fmt.Errorf("%w: name %q must be 1..%d bytes of UTF-8", ErrInvalidRegistration, name, MaxNameLen)
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return fmt.Errorf("%w: %v: %v types cannot be registered", ErrInvalidRegistration, t, t.Kind())
	}
	if t == rawType {
		return fmt.Errorf("%w: Raw is passed through, not registered", ErrInvalidRegistration)
	}
	var zero T
	if _, err := r.enc.Marshal(zero); err != nil {
		return fmt.Errorf("%w: %v cannot be encoded: %w", ErrInvalidRegistration, t, err)
	}
	e := &entry{
		name: name,
		typ:  t,
		word: typeWordOf[T](),
		decode: func(dm cbor.DecMode, body []byte) (any, error) {
			var v T
			if err := dm.Unmarshal(body, &v); err != nil {
				return nil, err
			}
			return v, nil
		},
		fast: newFastCodec[T](r.lim, r.enc, r.dec),
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.tab.Load()
	if prev, ok := old.byName[name]; ok {
		return fmt.Errorf("%w: name %q is already registered for %v", ErrDuplicate, name, prev.typ)
	}
	if prev, ok := old.byType[t]; ok {
		return fmt.Errorf("%w: %v is already registered as %q", ErrDuplicate, t, prev.name)
	}
	next := &table{
		byName: make(map[string]*entry, len(old.byName)+1),
		byType: make(map[reflect.Type]*entry, len(old.byType)+1),
	}
	for k, v := range old.byName {
		next.byName[k] = v
	}
	for k, v := range old.byType {
		next.byType[k] = v
	}
	next.byName[name] = e
	next.byType[t] = e
	r.tab.Store(next)
	return nil
}

// RegisterOnce is Register for code that may run more than once on the
// same registry (two nodes sharing one): T already registered under name
// is not an error. A name or a type taken by anything else still is
// (ErrDuplicate), so that no other type can stand in for T on the wire.
func RegisterOnce[T any](r *Registry, name string) error {
	err := Register[T](r, name)
	if errors.Is(err, ErrDuplicate) {
		if got, ok := r.TypeName(reflect.TypeFor[T]()); ok && got == name {
			return nil
		}
	}
	return err
}

// MustRegister is like Register but panics on error. It is meant for
// registrations at startup, whose failure is a programming error.
func MustRegister[T any](r *Registry, name string) {
	if err := Register[T](r, name); err != nil {
		panic(err)
	}
}

// Limits returns the decode limits r applies to message bodies.
func (r *Registry) Limits() Limits { return r.lim }

// TypeName returns the name t is registered under.
func (r *Registry) TypeName(t reflect.Type) (string, bool) {
	e, ok := r.tab.Load().byType[t]
	if !ok {
		return "", false
	}
	return e.name, true
}

// Len returns the number of registered types, built-ins included.
func (r *Registry) Len() int { return len(r.tab.Load().byName) }
