//go:build nounsafe

package codec

import "reflect"

// Built with the tag nounsafe, the codec makes no assumption about how
// the runtime lays out interface values (see layout_unsafe.go): a type
// word is the type's reflect.Type, and the fast path is left out
// (fast_safe.go), so every message takes the general path. The bytes on
// the wire are the same; only encoding and decoding cost more.

// typeWord identifies the dynamic type of interface values holding one
// type: equal type words mean equal dynamic types.
type typeWord = reflect.Type

// typeWordOf returns the type word of interface values holding a T, which
// must not be an interface type.
func typeWordOf[T any]() typeWord { return reflect.TypeFor[T]() }

// typeWordIn returns the type word of v (nil for a nil interface).
func typeWordIn(v any) typeWord { return reflect.TypeOf(v) }
