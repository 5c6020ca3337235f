//go:build !nounsafe

package codec

import (
	"encoding"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/fxamacker/cbor/v2"
)

// The fast path encodes and decodes plain structs (exported fields of kinds
// bool, signed and unsigned integers, string and []byte) without reflection
// or the CBOR library. It produces exactly the bytes the library produces
// and decodes only a strict subset of what the library accepts: a
// definite-length map whose keys are the fields' keys, each at most once and
// in field order, with values of the fields' own major types. Anything else
// (other key orders, indefinite lengths, nulls for integers, out-of-range
// values, invalid UTF-8, ...) falls back to the general path, which checks
// the body and decodes it with the library, so the fast path changes the
// cost of decoding, never its result or its errors. A type's plan is
// compared against the library at registration and dropped on any
// difference.

// fastKind is the kind of a struct field the fast path handles.
type fastKind uint8

const (
	fastBool fastKind = iota
	fastInt
	fastUint
	fastString
	fastBytes
)

// fastField is one encoded field of a struct.
type fastField struct {
	off       uintptr
	kind      fastKind
	size      uint8 // bytes of an integer field: 1, 2, 4 or 8
	omitEmpty bool
	key       []byte // the key's encoding: a text string or an integer
}

// fastPlan is how the fast path encodes and decodes one struct type.
type fastPlan struct {
	fields    []fastField
	lim       Limits
	omitEmpty bool // some field is omitempty: the map's size varies
}

// Interfaces through which the library lets a type encode or decode itself;
// a type implementing any of them never takes the fast path.
var selfCodingTypes = []reflect.Type{
	reflect.TypeFor[cbor.Marshaler](),
	reflect.TypeFor[cbor.Unmarshaler](),
	reflect.TypeFor[encoding.BinaryMarshaler](),
	reflect.TypeFor[encoding.BinaryUnmarshaler](),
	reflect.TypeFor[encoding.TextMarshaler](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

// codesItself reports whether t or *t implements one of selfCodingTypes.
func codesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, i := range selfCodingTypes {
		if t.Implements(i) || pt.Implements(i) {
			return true
		}
	}
	return false
}

// compileFast returns the fast-path plan of t, or nil when t is not a
// struct the fast path handles.
func compileFast(t reflect.Type, lim Limits) *fastPlan {
	if t.Kind() != reflect.Struct || codesItself(t) || pointerShaped(t) {
		return nil // pointer-shaped: an interface holds it, not a pointer to it (see packEface)
	}
	p := &fastPlan{lim: lim}
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous || f.Name == "_" {
			return nil // embedding and struct options (toarray)
		}
		if !f.IsExported() {
			continue // the library ignores unexported fields
		}
		tag, hasTag := f.Tag.Lookup("cbor")
		if _, ok := f.Tag.Lookup("json"); ok && !hasTag {
			return nil // the library would name the field after its json tag
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		ff := fastField{off: f.Offset}
		keyAsInt := false
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "":
			case "omitempty":
				ff.omitEmpty, p.omitEmpty = true, true
			case "keyasint":
				keyAsInt = true
			default:
				return nil
			}
		}
		if name == "" {
			name = f.Name
		}
		if !utf8.ValidString(name) || seen[name] {
			return nil
		}
		seen[name] = true
		if keyAsInt {
			k, err := strconv.ParseInt(name, 10, 64)
			if err != nil {
				return nil
			}
			ff.key = appendInt(nil, k)
		} else {
			ff.key = appendHead(nil, majorText, uint64(len(name)))
			ff.key = append(ff.key, name...)
		}
		ft := f.Type
		if codesItself(ft) {
			return nil
		}
		switch ft.Kind() {
		case reflect.Bool:
			ff.kind = fastBool
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			ff.kind, ff.size = fastInt, uint8(ft.Size())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			ff.kind, ff.size = fastUint, uint8(ft.Size())
		case reflect.String:
			ff.kind = fastString
		case reflect.Slice:
			if ft.Elem() != reflect.TypeFor[byte]() {
				return nil
			}
			ff.kind = fastBytes
		default:
			return nil
		}
		p.fields = append(p.fields, ff)
	}
	if len(p.fields) > lim.MaxMapPairs || len(p.fields) >= aiOneByte {
		return nil // keep map heads to one byte
	}
	return p
}

// appendInt appends the encoding of the signed integer v.
func appendInt(dst []byte, v int64) []byte {
	if v < 0 {
		return appendHead(dst, majorNegInt, uint64(-(v + 1)))
	}
	return appendHead(dst, majorUint, uint64(v))
}

// intAt and uintAt read an integer field of size bytes at p.
func intAt(p unsafe.Pointer, size uint8) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(p))
	case 2:
		return int64(*(*int16)(p))
	case 4:
		return int64(*(*int32)(p))
	}
	return *(*int64)(p)
}

func uintAt(p unsafe.Pointer, size uint8) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// isEmpty reports whether the field at fp holds its zero value (what
// omitempty leaves out).
func (f *fastField) isEmpty(fp unsafe.Pointer) bool {
	switch f.kind {
	case fastBool:
		return !*(*bool)(fp)
	case fastInt:
		return intAt(fp, f.size) == 0
	case fastUint:
		return uintAt(fp, f.size) == 0
	case fastString:
		return len(*(*string)(fp)) == 0
	}
	return len(*(*[]byte)(fp)) == 0
}

// appendValue appends the encoding of the struct at p. It reports false,
// leaving what it appended to be discarded, when a value needs the general
// path: a string that is not valid UTF-8 or a string over the limits,
// which the general path turns into an error.
func (pl *fastPlan) appendValue(dst []byte, p unsafe.Pointer) ([]byte, bool) {
	n := len(pl.fields)
	if pl.omitEmpty {
		n = 0
		for i := range pl.fields {
			f := &pl.fields[i]
			if !f.omitEmpty || !f.isEmpty(unsafe.Add(p, f.off)) {
				n++
			}
		}
	}
	dst = append(dst, majorMap<<5|byte(n))
	for i := range pl.fields {
		f := &pl.fields[i]
		fp := unsafe.Add(p, f.off)
		if f.omitEmpty && f.isEmpty(fp) {
			continue
		}
		dst = append(dst, f.key...)
		switch f.kind {
		case fastBool:
			if *(*bool)(fp) {
				dst = append(dst, 0xf5)
			} else {
				dst = append(dst, 0xf4)
			}
		case fastInt:
			dst = appendInt(dst, intAt(fp, f.size))
		case fastUint:
			dst = appendHead(dst, majorUint, uintAt(fp, f.size))
		case fastString:
			s := *(*string)(fp)
			if !pl.fastString(s) {
				return dst, false
			}
			dst = appendHead(dst, majorText, uint64(len(s)))
			dst = append(dst, s...)
		case fastBytes:
			b := *(*[]byte)(fp)
			if b == nil {
				dst = append(dst, 0xf6) // nil encodes as null
				continue
			}
			if len(b) > pl.lim.MaxStringLen {
				return dst, false
			}
			dst = appendHead(dst, majorBytes, uint64(len(b)))
			dst = append(dst, b...)
		}
	}
	return dst, true
}

// fastString reports whether the fast path encodes s: a valid UTF-8
// string within the limits (the general path reports any other).
func (pl *fastPlan) fastString(s string) bool {
	return len(s) <= pl.lim.MaxStringLen && (isASCIIString(s) || utf8.ValidString(s))
}

// size returns the length of what appendValue appends for the struct at
// p, without encoding it, and false where appendValue reports false.
func (pl *fastPlan) size(p unsafe.Pointer) (int, bool) {
	n := 1 // the map's head: a plan has fewer than 24 fields
	for i := range pl.fields {
		f := &pl.fields[i]
		fp := unsafe.Add(p, f.off)
		if f.omitEmpty && f.isEmpty(fp) {
			continue
		}
		n += len(f.key)
		switch f.kind {
		case fastBool:
			n++
		case fastInt:
			if v := intAt(fp, f.size); v < 0 {
				n += headLen(uint64(-(v + 1)))
			} else {
				n += headLen(uint64(v))
			}
		case fastUint:
			n += headLen(uintAt(fp, f.size))
		case fastString:
			s := *(*string)(fp)
			if !pl.fastString(s) {
				return 0, false
			}
			n += headLen(uint64(len(s))) + len(s)
		case fastBytes:
			b := *(*[]byte)(fp)
			switch {
			case b == nil:
				n++ // null
			case len(b) > pl.lim.MaxStringLen:
				return 0, false
			default:
				n += headLen(uint64(len(b))) + len(b)
			}
		}
	}
	return n, true
}
