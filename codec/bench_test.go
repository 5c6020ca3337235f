package codec

import (
	"bytes"
	"io"
	"testing"
)

// The benchmarks use a chat message envelope: a 100-byte body, short names
// and a 38-byte peer ID (the larger of the two forms routing sends).

func BenchmarkEnvelopeEncode(b *testing.B) {
	e := chatEnvelope(b, testPeerID)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendEnvelope(buf[:0], e); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkEnvelopeDecode(b *testing.B) {
	data, err := AppendEnvelope(nil, chatEnvelope(b, testPeerID))
	if err != nil {
		b.Fatal(err)
	}
	var e Envelope
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeEnvelope(data, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnvelopeRoundTrip(b *testing.B) {
	e := chatEnvelope(b, testPeerID)
	buf := make([]byte, 0, 512)
	var out Envelope
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendEnvelope(buf[:0], e); err != nil {
			b.Fatal(err)
		}
		if err := DecodeEnvelope(buf, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFramePipe sends 1,000,000 envelopes per iteration from a
// FrameWriter to a FrameReader through an io.Pipe, on two goroutines, and
// reports the rate in messages per second.
func BenchmarkFramePipe(b *testing.B) {
	const frames = 1_000_000
	e := chatEnvelope(b, testPeerID)
	b.ReportAllocs()
	for b.Loop() {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			fw := NewFrameWriter(pw, 0)
			for range frames {
				if err := fw.WriteEnvelope(e); err != nil {
					done <- err
					return
				}
			}
			done <- fw.Flush()
		}()
		fr := NewFrameReader(pr, 0)
		var got Envelope
		for i := range frames {
			if err := fr.ReadEnvelope(&got); err != nil {
				b.Fatalf("frame %d: %v", i, err)
			}
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		pr.Close()
	}
	b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkRegistryEncode(b *testing.B) {
	r := newTestRegistry(b)
	MustRegister[chatSay](r, "chat.Say")
	msg := chatSay{Room: "lobby", Text: "hello, world"}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Encode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRegistryDecode(b *testing.B) {
	r := newTestRegistry(b)
	MustRegister[chatSay](r, "chat.Say")
	name, body, err := r.Encode(chatSay{Room: "lobby", Text: "hello, world"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Decode(name, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRegistryAppendEncode(b *testing.B) {
	r := newTestRegistry(b)
	MustRegister[chatSay](r, "chat.Say")
	var msg any = chatSay{Room: "lobby", Text: "hello, world"}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if _, buf, err = r.AppendEncode(buf[:0], msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadMessage reads and decodes envelopes carrying a 100-byte
// []byte field from an in-memory stream, as a stream reader does.
func BenchmarkReadMessage(b *testing.B) {
	type blob struct{ Data []byte }
	r := newTestRegistry(b)
	MustRegister[blob](r, "bench.Blob")
	var stream []byte
	fw := NewFrameWriter(writerFunc(func(p []byte) (int, error) { stream = append(stream, p...); return len(p), nil }), 0)
	const frames = 10_000
	for i := range frames {
		_, body, err := r.Encode(blob{Data: make([]byte, 100+i%2)})
		if err != nil {
			b.Fatal(err)
		}
		if err := fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "sink", FromName: "source", Type: "bench.Blob", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var e Envelope
	var fr *FrameReader
	for i := 0; b.Loop(); i++ {
		if i%frames == 0 {
			fr = NewFrameReader(bytes.NewReader(stream), 0)
		}
		if _, err := fr.ReadMessage(r, &e); err != nil {
			b.Fatal(err)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
