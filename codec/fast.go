package codec

import (
	"bytes"
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

// decode decodes body into the zero struct at p. It reports false when
// body is not in the strict form the fast path accepts; the caller then
// decodes it again with the general path. Byte strings are copied into
// memory from alloc (nil: the heap).
func (pl *fastPlan) decode(p unsafe.Pointer, body []byte, c *streamCache) bool {
	r := envReader{data: body}
	if len(body) == 0 || body[0]>>5 != majorMap {
		return false
	}
	n := int(body[0] & 0x1f)
	if n >= aiOneByte || n > len(pl.fields) {
		return false
	}
	r.off = 1
	next := 0 // first field whose key may come next
	for ; n > 0; n-- {
		i := next
		for ; i < len(pl.fields); i++ {
			k := pl.fields[i].key
			if len(body)-r.off >= len(k) && bytes.Equal(body[r.off:r.off+len(k)], k) {
				break
			}
		}
		if i == len(pl.fields) {
			return false
		}
		f := &pl.fields[i]
		next = i + 1
		r.off += len(f.key)
		if r.off >= len(body) {
			return false
		}
		fp := unsafe.Add(p, f.off)
		b := body[r.off]
		switch f.kind {
		case fastBool:
			switch b {
			case 0xf4:
				*(*bool)(fp) = false
			case 0xf5:
				*(*bool)(fp) = true
			default:
				return false
			}
			r.off++
		case fastInt:
			major := b >> 5
			if major != majorUint && major != majorNegInt {
				return false
			}
			arg, ok := r.arg()
			limit := uint64(1)<<(8*f.size-1) - 1
			if !ok || arg > limit {
				return false
			}
			v := int64(arg)
			if major == majorNegInt {
				v = -1 - v
			}
			switch f.size {
			case 1:
				*(*int8)(fp) = int8(v)
			case 2:
				*(*int16)(fp) = int16(v)
			case 4:
				*(*int32)(fp) = int32(v)
			default:
				*(*int64)(fp) = v
			}
		case fastUint:
			if b>>5 != majorUint {
				return false
			}
			arg, ok := r.arg()
			if !ok || (f.size < 8 && arg >= uint64(1)<<(8*f.size)) {
				return false
			}
			switch f.size {
			case 1:
				*(*uint8)(fp) = uint8(arg)
			case 2:
				*(*uint16)(fp) = uint16(arg)
			case 4:
				*(*uint32)(fp) = uint32(arg)
			default:
				*(*uint64)(fp) = arg
			}
		case fastString:
			s, ok := r.payload(majorText, pl.lim.MaxStringLen)
			if !ok || (!isASCII(s) && !utf8.Valid(s)) {
				return false
			}
			*(*string)(fp) = string(s)
		case fastBytes:
			if b == 0xf6 {
				r.off++
				continue // null: nil, as the struct starts zeroed
			}
			s, ok := r.payload(majorBytes, pl.lim.MaxStringLen)
			if !ok {
				return false
			}
			var out []byte
			if c != nil && len(s) > 0 {
				out = c.bytes(len(s))
			} else {
				out = make([]byte, len(s))
			}
			copy(out, s)
			*(*[]byte)(fp) = out
		}
	}
	return r.off == len(body)
}

// arg reads the argument of a definite head at r.off, whose major type the
// caller checked.
func (r *envReader) arg() (uint64, bool) {
	_, ai, arg, next, err := readHead(r.data, r.off)
	if err != nil || ai == aiIndefinite {
		return 0, false
	}
	r.off = next
	return arg, true
}

// payload reads a definite-length string of the major type, at most limit
// bytes long, and returns its payload.
func (r *envReader) payload(major byte, limit int) ([]byte, bool) {
	if r.data[r.off]>>5 != major {
		return nil, false
	}
	n, ok := r.arg()
	if !ok || n > uint64(limit) || n > uint64(len(r.data)-r.off) {
		return nil, false
	}
	s := r.data[r.off : r.off+int(n)]
	r.off += int(n)
	return s, true
}

// fastCodec is the typed fast path of one registered type.
type fastCodec struct {
	encode func(dst []byte, v any) ([]byte, bool)
	size   func(v any) (int, bool) // the length of what encode appends
	decode func(body []byte, c *streamCache) (any, bool)
}

// newFastCodec returns the fast path for T, or nil when T has none or its
// plan disagrees with the library enc and dec on probe values.
func newFastCodec[T any](lim Limits, enc cbor.EncMode, dec cbor.DecMode) *fastCodec {
	plan := compileFast(reflect.TypeFor[T](), lim)
	if plan == nil {
		return nil
	}
	typeWord := typeWordOf[T]()
	// valueOf returns where the T in v is. An interface holding a T
	// points to it (compileFast refuses the pointer-shaped types, which
	// an interface holds in itself), so the value is read in place rather
	// than copied out.
	valueOf := func(v any) unsafe.Pointer {
		if e := (*eface)(unsafe.Pointer(&v)); e.typ == typeWord {
			return e.data
		}
		t := v.(T) // panics, as a wrong type is a programming error
		return unsafe.Pointer(&t)
	}
	fc := &fastCodec{
		encode: func(dst []byte, v any) ([]byte, bool) { return plan.appendValue(dst, valueOf(v)) },
		size:   func(v any) (int, bool) { return plan.size(valueOf(v)) },
	}
	size := unsafe.Sizeof(*new(T))
	fc.decode = func(body []byte, c *streamCache) (any, bool) {
		if c == nil || size == 0 || size > maxBoxed || len(body) > maxBoxedBody {
			var t T
			if !plan.decode(unsafe.Pointer(&t), body, c) {
				return nil, false
			}
			return t, true
		}
		p := (*T)(c.boxes.next(fc, size, func(n int) unsafe.Pointer {
			return unsafe.Pointer(unsafe.SliceData(make([]T, n)))
		}))
		if !plan.decode(unsafe.Pointer(p), body, c) {
			var zero T
			*p = zero // the slot stays free for the next value
			return nil, false
		}
		c.boxes.used++
		return packEface(typeWord, unsafe.Pointer(p)), true
	}
	var zero T
	for _, probe := range []T{zero, probeValue[T](1), probeValue[T](2)} {
		if !fc.agrees(probe, enc, dec) {
			return nil
		}
	}
	return fc
}

// pointerShaped reports whether an interface value holds a t itself (its
// one word is a pointer) rather than a pointer to a copy: a struct whose
// only field is a pointer, map, channel or function is, even when that
// field is unexported.
func pointerShaped(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Chan, reflect.Map, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Struct:
		return t.NumField() == 1 && pointerShaped(t.Field(0).Type)
	case reflect.Array:
		return t.Len() == 1 && pointerShaped(t.Elem())
	}
	return false
}

// eface is the layout of an interface value (the runtime's eface).
type eface struct {
	typ, data unsafe.Pointer
}

// typeWordOf returns the type word of interface values holding a T.
func typeWordOf[T any]() unsafe.Pointer {
	var v any = *new(T)
	return (*eface)(unsafe.Pointer(&v)).typ
}

// packEface returns the interface value of type word typ whose value is
// the one at p. T must not be pointer-shaped (compileFast refuses those),
// so that an interface holding a T points to a T, as one made by boxing
// does; the T at p must never change again.
func packEface(typ, p unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// maxBoxed is the size of the largest decoded value carved from a shared
// chunk, maxBoxedBody the longest body it may be decoded from; boxChunk is
// the size of a chunk. A value's slices and strings come from its body,
// so a value kept alive keeps at most a chunk's worth of others' data
// (boxChunk/elemSize values of at most maxBoxedBody bytes each): a large
// message, which an actor may keep for long, is boxed alone.
const (
	maxBoxed     = 256
	maxBoxedBody = slabSize
	boxChunk     = 2 << 10
)

// boxes hands out the memory of decoded values of one type at a time from
// shared chunks, so that a stream of small messages costs one allocation
// per chunk instead of one per message (boxing a value copies it to the
// heap). As with streamCache's byte slices, a value kept alive keeps its
// chunk alive.
type boxes struct {
	owner      *fastCodec     // whose values the chunk holds
	chunk      unsafe.Pointer // its first element
	used, size int            // elements handed out, elements in the chunk
}

// next returns the next free slot for owner's values of elemSize bytes,
// starting a chunk made by alloc when needed. The caller counts the slot
// as used once it holds a value.
func (b *boxes) next(owner *fastCodec, elemSize uintptr, alloc func(n int) unsafe.Pointer) unsafe.Pointer {
	if b.owner != owner || b.used == b.size {
		b.owner, b.used, b.size = owner, 0, max(1, boxChunk/int(elemSize))
		b.chunk = alloc(b.size)
	}
	return unsafe.Add(b.chunk, uintptr(b.used)*elemSize)
}

// agrees reports whether the fast path encodes v to the library's bytes
// and decodes those bytes to what the library decodes.
func (fc *fastCodec) agrees(v any, enc cbor.EncMode, dec cbor.DecMode) bool {
	want, err := enc.Marshal(v)
	if err != nil {
		return false
	}
	got, ok := fc.encode(nil, v)
	if !ok || !bytes.Equal(got, want) {
		return false
	}
	if n, ok := fc.size(v); !ok || n != len(want) {
		return false
	}
	back, ok := fc.decode(want, nil)
	if !ok {
		return false
	}
	ref := reflect.New(reflect.TypeOf(v))
	if err := dec.Unmarshal(want, ref.Interface()); err != nil {
		return false
	}
	return reflect.DeepEqual(back, ref.Elem().Interface())
}

// probeValue returns a T whose exported fields are all set to non-zero
// values that take multi-byte heads; variant 2 uses negative and empty
// values.
func probeValue[T any](variant int) T {
	var t T
	v := reflect.ValueOf(&t).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(variant == 1)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if variant == 1 {
				f.SetInt(100 + int64(i))
			} else {
				f.SetInt(-100 - int64(i))
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(200 + uint64(i))
		case reflect.String:
			if variant == 1 {
				f.SetString("probé " + strconv.Itoa(i))
			}
		case reflect.Slice:
			if variant == 1 {
				f.SetBytes(bytes.Repeat([]byte{byte(i)}, 30))
			} else {
				f.SetBytes([]byte{})
			}
		}
	}
	return t
}
