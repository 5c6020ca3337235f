package codec

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestBodyTail: bodies encoded in place through BodyTail make exactly the
// frames that bodies of their own make, across short and full envelopes,
// body heads of every length, flushes and a buffer outgrown; and a steady
// stream of like envelopes is written without moving its bodies.
func TestBodyTail(t *testing.T) {
	for _, compact := range []bool{false, true} {
		var want, got bytes.Buffer
		plain := NewFrameWriter(&want, 0, WithCompact(compact))
		tail := NewFrameWriter(&got, 0, WithCompact(compact))
		rng := rand.New(rand.NewPCG(1, 2))
		inPlace := 0
		for i := range 20000 {
			var n int
			switch r := rng.IntN(10); {
			case r < 6:
				n = 100 // mostly like envelopes
			case r < 8:
				n = rng.IntN(300)
			default:
				n = rng.IntN(70000)
			}
			body := make([]byte, n)
			for j := range body {
				body[j] = byte(rng.Uint32())
			}
			e := Envelope{Kind: KindUser, To: "sink", FromName: "source", Type: "t"}
			if rng.IntN(20) == 0 {
				e.To = "other"
			}
			if rng.IntN(3) == 0 {
				e.Corr = rng.Uint64N(1 << uint(rng.IntN(64)))
			}
			e.Body = body
			werr := plain.WriteEnvelope(&e)
			dst := tail.BodyTail()
			if dst == nil {
				dst = []byte{}
			}
			b := append(dst, body...)
			if len(b) > 0 && cap(dst) > 0 && unsafe.SliceData(b) == unsafe.SliceData(dst) {
				inPlace++
			}
			e.Body = b
			if gerr := tail.WriteEnvelope(&e); (werr == nil) != (gerr == nil) {
				t.Fatalf("compact=%v, envelope %d: errors %v and %v", compact, i, werr, gerr)
			}
		}
		if err := plain.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := tail.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Fatalf("compact=%v: frames differ (%d and %d bytes)", compact, want.Len(), got.Len())
		}
		if inPlace < 10000 {
			t.Fatalf("compact=%v: %d bodies encoded in place", compact, inPlace)
		}
	}
	// A steady stream: bodies encoded in place, and none moved.
	fw := NewFrameWriter(&bytes.Buffer{}, 0, WithCompact(true))
	e := Envelope{Kind: KindUser, To: "sink", FromName: "source", Type: "t", Body: make([]byte, 100)}
	tails := 0
	for range 2000 {
		if dst := fw.BodyTail(); dst != nil {
			e.Body = append(dst, make([]byte, 100)...)
			tails++
		}
		if err := fw.WriteEnvelope(&e); err != nil {
			t.Fatal(err)
		}
	}
	if tails < 1900 || fw.spill != nil {
		t.Fatalf("%d of 2000 bodies encoded in place; spill buffer %v", tails, fw.spill != nil)
	}
}
