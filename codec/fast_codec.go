//go:build !nounsafe

package codec

import (
	"bytes"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/fxamacker/cbor/v2"
)

// fastCodec wraps a type's plan for the registry: typed encode, size and
// decode through unsafe pointers, boxes for decoded values, and the check
// against the CBOR library at registration.

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
		if p, ok := dataIn(v, typeWord); ok {
			return p
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
