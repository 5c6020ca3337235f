//go:build !nounsafe

package codec

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"
)

// Tests of the fast path itself, which the nounsafe build leaves out.

func TestFastPathCoversPlainStructs(t *testing.T) {
	r := newFastRegistry(t)
	tab := r.tab.Load()
	for name, want := range map[string]bool{
		"chat.Say": true, "fast.All": true, "fast.Tagged": true, "fast.Renamed": true,
		"fast.Blob": true, "fast.WithNamed": true, "test.Point": true, "test.Empty": true,
		"slow.JSON": false, "slow.Embed": false, "slow.Time": false, "slow.Float": false,
		"slow.Nested": false, "slow.Array": false, "slow.Marshaler": false,
		"slow.PtrShaped": false, "slow.MapShaped": false,
		"test.Shape": false, "test.WithRef": false, "troupe.Ref": false, "string": false,
	} {
		if got := tab.byName[name].fast != nil; got != want {
			t.Errorf("%s: fast path %v, want %v", name, got, want)
		}
	}
}

func TestAppendEncodeAllocs(t *testing.T) {
	r := newFastRegistry(t)
	var v any = fastBlob{Data: bytes.Repeat([]byte{1}, 100)}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if _, buf, err = r.AppendEncode(buf[:0], v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendEncode allocates %.1f times, want 0", allocs)
	}
	prefix := []byte{9, 9}
	name, out, err := r.AppendEncode(prefix, v)
	want, _ := r.enc.Marshal(v)
	if err != nil || name != "fast.Blob" || !bytes.Equal(out, append([]byte{9, 9}, want...)) {
		t.Errorf("AppendEncode = %q, %x, %v", name, out, err)
	}
	if _, out, err := r.AppendEncode(prefix, chatSay{Text: "\xff"}); err == nil || !bytes.Equal(out, prefix) {
		t.Errorf("failed AppendEncode = %x, %v; want dst unchanged and an error", out, err)
	}
	if _, out, err := r.AppendEncode(prefix, Raw{Type: "x", Body: []byte{0x01}}); err != nil || !bytes.Equal(out, []byte{9, 9, 1}) {
		t.Errorf("AppendEncode(Raw) = %x, %v", out, err)
	}
}

func FuzzFastDecode(f *testing.F) {
	r := newFastRegistry(f)
	for _, v := range fastValues() {
		_, body, err := r.Encode(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	names := []string{"chat.Say", "fast.All", "fast.Tagged", "fast.Renamed", "fast.Blob", "fast.WithNamed", "test.Point"}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, name := range names {
			e := r.tab.Load().byName[name]
			fast, ok := e.fast.decode(body, nil)
			general, err := e.decode(r.dec, body)
			if err == nil {
				err = checkWellFormed(body, &r.lim)
			}
			if !ok {
				continue
			}
			if err != nil {
				t.Fatalf("%s: fast path accepted %x, general path: %v", name, body, err)
			}
			if !reflect.DeepEqual(fast, general) {
				t.Fatalf("%s: fast path decoded %x to %#v, general path to %#v", name, body, fast, general)
			}
		}
	})
}

func TestReadMessageSteadyStateAllocs(t *testing.T) {
	r := newFastRegistry(t)
	var stream bytes.Buffer
	fw := NewFrameWriter(&stream, 0)
	const n = 1000
	for i := range n {
		_, body, err := r.Encode(fastBlob{Data: bytes.Repeat([]byte{byte(i)}, 100)})
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "sink", FromName: "src", Type: "fast.Blob", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	fr := NewFrameReader(bytes.NewReader(stream.Bytes()), 0)
	var e Envelope
	allocs := testing.AllocsPerRun(n-1, func() {
		if _, err := fr.ReadMessage(r, &e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.2 {
		t.Errorf("ReadMessage: %.2f allocations per message, want < 0.2", allocs)
	}
}

// TestLargeValuesAreBoxedAlone: a value decoded from a body over
// maxBoxedBody gets its own box rather than a slot in the stream's shared
// chunk, whose other values (and their data) it would keep alive for as
// long as an actor keeps it: the small values around it share a chunk.
func TestLargeValuesAreBoxedAlone(t *testing.T) {
	r := newFastRegistry(t)
	var stream bytes.Buffer
	fw := NewFrameWriter(&stream, 0)
	for _, size := range []int{10, maxBoxedBody + 1, 10} {
		typ, body, err := r.Encode(fastBlob{Data: make([]byte, size)})
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "sink", Type: typ, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	fr := NewFrameReader(&stream, 0)
	var ptrs []uintptr
	for range 3 {
		var e Envelope
		v, err := fr.ReadMessage(r, &e)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := dataIn(v, typeWordIn(v))
		ptrs = append(ptrs, uintptr(p))
	}
	elem := unsafe.Sizeof(fastBlob{})
	if ptrs[2]-ptrs[0] != elem {
		t.Fatalf("the small values are %d bytes apart, want adjacent slots (%d): the large one took a slot", ptrs[2]-ptrs[0], elem)
	}
	if ptrs[1] >= ptrs[0] && ptrs[1] < ptrs[0]+boxChunk {
		t.Fatal("the large value is in the small values' chunk")
	}
}
