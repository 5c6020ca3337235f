//go:build !nounsafe

package codec

import "unsafe"

// setString stores s in *dst unless *dst already is s, the same string in
// memory: a store of a pointer costs a write barrier while the GC runs.
func setString(dst *string, s string) {
	if len(*dst) != len(s) || unsafe.StringData(*dst) != unsafe.StringData(s) {
		*dst = s
	}
}

// setBytes stores b in *dst unless *dst already is b (the same memory,
// length and capacity).
func setBytes(dst *[]byte, b []byte) {
	if unsafe.SliceData(*dst) != unsafe.SliceData(b) || len(*dst) != len(b) || cap(*dst) != cap(b) {
		*dst = b
	}
}
