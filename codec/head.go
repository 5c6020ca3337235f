package codec

import (
	"encoding/binary"
	"fmt"
)

// CBOR major types (RFC 8949 section 3.1).
const (
	majorUint   = 0
	majorNegInt = 1
	majorBytes  = 2
	majorText   = 3
	majorArray  = 4
	majorMap    = 5
	majorTag    = 6
	majorSimple = 7
)

// Values of the 5-bit additional information of an initial byte.
const (
	aiOneByte    = 24
	aiTwoBytes   = 25
	aiFourBytes  = 26
	aiEightBytes = 27
	aiIndefinite = 31
)

// majorNames names the major types in error messages.
var majorNames = [8]string{
	"unsigned integer", "negative integer", "byte string", "text string",
	"array", "map", "tag", "simple value or float",
}

// putHead writes the shortest CBOR head for major type major and argument
// arg at the start of b, which must have room for it, and returns its
// length.
func putHead(b []byte, major byte, arg uint64) int {
	m := major << 5
	switch {
	case arg < aiOneByte:
		b[0] = m | byte(arg)
		return 1
	case arg <= 0xff:
		b[0], b[1] = m|aiOneByte, byte(arg)
		return 2
	case arg <= 0xffff:
		b[0] = m | aiTwoBytes
		binary.BigEndian.PutUint16(b[1:], uint16(arg))
		return 3
	case arg <= 0xffffffff:
		b[0] = m | aiFourBytes
		binary.BigEndian.PutUint32(b[1:], uint32(arg))
		return 5
	default:
		b[0] = m | aiEightBytes
		binary.BigEndian.PutUint64(b[1:], arg)
		return 9
	}
}

// appendHead appends the shortest CBOR head for major and arg.
func appendHead(dst []byte, major byte, arg uint64) []byte {
	switch {
	case arg < aiOneByte:
		return append(dst, major<<5|byte(arg))
	case arg <= 0xff:
		return append(dst, major<<5|aiOneByte, byte(arg))
	}
	var b [9]byte
	return append(dst, b[:putHead(b[:], major, arg)]...)
}

// headLen returns the number of bytes putHead writes for arg.
func headLen(arg uint64) int {
	switch {
	case arg < aiOneByte:
		return 1
	case arg <= 0xff:
		return 2
	case arg <= 0xffff:
		return 3
	case arg <= 0xffffffff:
		return 5
	default:
		return 9
	}
}

// readHead parses the head at data[off:]. It returns the major type, the
// additional information, the argument and the offset just after the head.
// For ai == aiIndefinite the argument is zero; the caller decides whether an
// indefinite length (or a break, for major type 7) is allowed there. Reserved
// additional information values (28..30) and truncated heads are errors.
func readHead(data []byte, off int) (major, ai byte, arg uint64, next int, err error) {
	if off >= len(data) {
		return 0, 0, 0, off, fmt.Errorf("%w: truncated: data item expected at offset %d", ErrMalformed, off)
	}
	b := data[off]
	major, ai = b>>5, b&0x1f
	off++
	switch {
	case ai < aiOneByte:
		return major, ai, uint64(ai), off, nil
	case ai == aiIndefinite:
		return major, ai, 0, off, nil
	case ai > aiEightBytes:
		return 0, 0, 0, off, fmt.Errorf("%w: reserved additional information %d at offset %d", ErrMalformed, ai, off-1)
	}
	n := 1 << (ai - aiOneByte) // 1, 2, 4 or 8 bytes
	if len(data)-off < n {
		return 0, 0, 0, off, fmt.Errorf("%w: truncated head at offset %d", ErrMalformed, off-1)
	}
	switch n {
	case 1:
		arg = uint64(data[off])
	case 2:
		arg = uint64(binary.BigEndian.Uint16(data[off:]))
	case 4:
		arg = uint64(binary.BigEndian.Uint32(data[off:]))
	default:
		arg = binary.BigEndian.Uint64(data[off:])
	}
	return major, ai, arg, off + n, nil
}
