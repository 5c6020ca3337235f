//go:build !nounsafe

package routing

import "unsafe"

// sameString is a == b, quicker when both are the same string in memory,
// as names from a FrameReader's cache mostly are.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}
