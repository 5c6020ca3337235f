//go:build !nounsafe

package actor

import "unsafe"

// sameString is a == b, quicker when both are the same string in memory.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// sameCase reports whether a and b are the same interface value, word
// for word (which == cannot test for cases that hold functions).
func sameCase(a, b Case) bool {
	return *(*[2]unsafe.Pointer)(unsafe.Pointer(&a)) == *(*[2]unsafe.Pointer)(unsafe.Pointer(&b))
}

// before orders two actors for the tie rule of follow: by address.
func before(a, b *Context) bool { return uintptr(unsafe.Pointer(a)) < uintptr(unsafe.Pointer(b)) }
