//go:build !nounsafe

package codec

import (
	"bytes"
	"unicode/utf8"
	"unsafe"
)

// Decoding on the fast path: the strict subset of CBOR a plan accepts
// (see fast.go); anything else falls back to the general path.

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
