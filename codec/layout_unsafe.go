//go:build !nounsafe

package codec

import (
	"reflect"
	"unsafe"
)

// Every assumption the codec makes about how the runtime lays out an
// interface value is in this file, and layout_test.go checks each against
// reflect. An interface value (the runtime's eface) is two words: a type
// word, which points to the type's descriptor, and a data word. For most
// types the data word points to a copy of the value; for a pointer-shaped
// type (see pointerShaped) it is the value itself. The fast path uses only
// types that are not pointer-shaped, whose data word is a pointer to a T.
//
// With the build tag nounsafe, layout_safe.go replaces this file and the
// fast path is left out.

// typeWord is the type word of interface values holding one type: equal
// type words mean equal dynamic types.
type typeWord unsafe.Pointer

// eface is the layout of an interface value.
type eface struct {
	typ  typeWord
	data unsafe.Pointer
}

// typeWordOf returns the type word of interface values holding a T, which
// must not be an interface type.
func typeWordOf[T any]() typeWord {
	var v any = *new(T)
	return typeWordIn(v)
}

// typeWordIn returns the type word of v (nil for a nil interface).
func typeWordIn(v any) typeWord {
	return (*eface)(unsafe.Pointer(&v)).typ
}

// dataIn returns v's data word when v's type word is typ. For a T that
// is not pointer-shaped and typ = typeWordOf[T](), it points to the T in
// v, which must not be written through it.
func dataIn(v any, typ typeWord) (unsafe.Pointer, bool) {
	e := (*eface)(unsafe.Pointer(&v))
	return e.data, e.typ == typ
}

// packEface returns the interface value of type word typ whose data word
// is p: for typ = typeWordOf[T](), the same value as any(*(*T)(p)), but
// without copying the T. T must not be pointer-shaped (compileFast refuses
// those): an interface holds such a T in its data word, not a pointer to
// it. The T at p must never change again.
func packEface(typ typeWord, p unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// pointerShaped reports whether an interface value holds a t in its data
// word itself rather than a pointer to a copy (the compiler's "direct
// interface" types): pointers, maps, channels, functions, and a struct or
// array whose only field or element is pointer-shaped, even when that
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
