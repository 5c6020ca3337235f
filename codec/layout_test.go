//go:build !nounsafe

package codec

import (
	"reflect"
	"testing"
	"unsafe"
)

// These tests check layout_unsafe.go's assumptions about interface values
// against reflect on the Go version that builds them. If one fails after
// a Go upgrade, build with -tags nounsafe until layout_unsafe.go is fixed.

// Types whose interface values hold a pointer to a copy.
type (
	layoutPtrs struct {
		S string
		B []byte
		P *int
	}
	layoutInts struct {
		A int8
		B uint64
		C int32
	}
	layoutTwoPtrs struct{ p, q *int }
	layoutPadded  struct {
		p *int
		_ [0]int
	}
	layoutEmpty struct{}
)

// Pointer-shaped types, which an interface value holds in its data word.
type (
	layoutOnePtr   struct{ p *int }
	layoutOneMap   struct{ m map[int]int }
	layoutNested   struct{ in layoutOnePtr }
	layoutOneArray [1]*int
)

// checkRoundTrip checks typeWordOf, typeWordIn, dataIn and packEface on v,
// a value of a type that is not pointer-shaped.
func checkRoundTrip[T any](t *testing.T, v T) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	if pointerShaped(typ) {
		t.Fatalf("%v: pointer-shaped", typ)
	}
	word := typeWordOf[T]()
	var boxed any = v
	if got := typeWordIn(boxed); got != word {
		t.Errorf("%v: typeWordIn = %p, typeWordOf = %p", typ, got, word)
	}
	// The type word is the type's descriptor, the *rtype in reflect.Type.
	if rt, _ := dataIn(any(typ), typeWordIn(any(typ))); typeWord(rt) != word {
		t.Errorf("%v: type word %p, reflect's descriptor %p", typ, word, rt)
	}
	p, ok := dataIn(boxed, word)
	if !ok || !reflect.DeepEqual(*(*T)(p), v) {
		t.Fatalf("%v: dataIn = %p, %v; does not point to the value", typ, p, ok)
	}
	if _, ok := dataIn(boxed, typeWordOf[struct{ other int }]()); ok {
		t.Errorf("%v: dataIn matched another type's word", typ)
	}
	c := new(T)
	*c = v
	packed := packEface(word, unsafe.Pointer(c))
	if reflect.TypeOf(packed) != typ || !reflect.DeepEqual(packed, boxed) {
		t.Errorf("%v: packEface = %#v (%T), want %#v", typ, packed, packed, v)
	}
	if got, ok := packed.(T); !ok || !reflect.DeepEqual(got, v) {
		t.Errorf("%v: packed.(T) = %#v, %v", typ, got, ok)
	}
	if q, _ := dataIn(packed, word); q != unsafe.Pointer(c) {
		t.Errorf("%v: packEface copied the value (%p, want %p)", typ, q, c)
	}
}

func TestLayoutRoundTrip(t *testing.T) {
	n := 5
	checkRoundTrip(t, layoutPtrs{S: "s", B: []byte{1, 2}, P: &n})
	checkRoundTrip(t, layoutPtrs{})
	checkRoundTrip(t, layoutInts{A: -1, B: 1 << 60, C: 7})
	checkRoundTrip(t, layoutTwoPtrs{p: &n, q: &n})
	checkRoundTrip(t, layoutPadded{p: &n})
	checkRoundTrip(t, layoutEmpty{})
	checkRoundTrip(t, int8(-3))
	checkRoundTrip(t, 42)
	checkRoundTrip(t, uint64(1<<63))
	checkRoundTrip(t, true)
	checkRoundTrip(t, "a string")
	checkRoundTrip(t, []byte("bytes"))
	checkRoundTrip(t, [3]int{1, 2, 3})
	checkRoundTrip(t, chatSay{Room: "r", Text: "t"})
	if typeWordIn(nil) != nil {
		t.Error("typeWordIn(nil) is not nil")
	}
	if typeWordOf[int]() == typeWordOf[int64]() || typeWordOf[layoutOnePtr]() == typeWordOf[layoutTwoPtrs]() {
		t.Error("two types share a type word")
	}
}

// checkShape checks pointerShaped(T) against the runtime: v's first word
// is first, and an interface holding v holds first itself exactly when T
// is pointer-shaped.
func checkShape[T any](t *testing.T, v T, first unsafe.Pointer, want bool) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	if got := pointerShaped(typ); got != want {
		t.Errorf("pointerShaped(%v) = %v, want %v", typ, got, want)
	}
	p, _ := dataIn(v, typeWordOf[T]())
	if direct := p == first; direct != want {
		t.Errorf("%v: the interface holds the value itself: %v, want %v", typ, direct, want)
	}
	if want && compileFast(typ, DefaultLimits()) != nil {
		t.Errorf("%v: compileFast made a plan for a pointer-shaped type", typ)
	}
}

func TestPointerShapedMatchesRuntime(t *testing.T) {
	n := 1
	p := unsafe.Pointer(&n)
	m := map[int]int{1: 1}
	checkShape(t, layoutOnePtr{&n}, p, true)
	checkShape(t, layoutNested{layoutOnePtr{&n}}, p, true)
	checkShape(t, layoutOneArray{&n}, p, true)
	checkShape(t, &n, p, true)
	checkShape(t, layoutOneMap{m}, *(*unsafe.Pointer)(unsafe.Pointer(&m)), true)
	checkShape(t, layoutTwoPtrs{p: &n, q: &n}, p, false)
	checkShape(t, layoutPadded{p: &n}, p, false)
	checkShape(t, [2]*int{&n}, p, false)
	s := layoutPtrs{S: "s", P: &n}
	checkShape(t, s, unsafe.Pointer(unsafe.StringData(s.S)), false)
}
