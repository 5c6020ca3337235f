package codec

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// countingWriter records the calls made to Write.
type countingWriter struct {
	bytes.Buffer
	calls int
	err   error // returned instead of writing, if set
	short bool  // write one byte less than asked, without an error
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.err != nil {
		return 0, w.err
	}
	if w.short {
		return w.Buffer.Write(p[:len(p)-1])
	}
	return w.Buffer.Write(p)
}

func TestFrameWriterBatches(t *testing.T) {
	var w countingWriter
	fw := NewFrameWriter(&w, 0)
	e := chatEnvelope(t, testPeerID)
	for range 100 {
		if err := fw.WriteEnvelope(e); err != nil {
			t.Fatal(err)
		}
	}
	if w.calls != 0 {
		t.Fatalf("%d writes before Flush, want 0", w.calls)
	}
	if fw.Buffered() == 0 {
		t.Fatal("Buffered() = 0 after writing frames")
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.calls != 1 || fw.Buffered() != 0 {
		t.Fatalf("after Flush: %d writes, %d buffered; want 1 and 0", w.calls, fw.Buffered())
	}
	if err := fw.Flush(); err != nil || w.calls != 1 {
		t.Fatalf("empty Flush: err %v, %d writes", err, w.calls)
	}
	fr := NewFrameReader(&w.Buffer, 0)
	for i := range 100 {
		var got Envelope
		if err := fr.ReadEnvelope(&got); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}

func TestFrameWriterFlushesAtThreshold(t *testing.T) {
	var w countingWriter
	fw := NewFrameWriter(&w, 0)
	e := chatEnvelope(t, testPeerID)
	n := 0
	for w.calls == 0 {
		if err := fw.WriteEnvelope(e); err != nil {
			t.Fatal(err)
		}
		n++
		if n > 2*flushThreshold/100 {
			t.Fatal("no automatic flush")
		}
	}
	// The frame that did not fit waits in the buffer; what was written
	// fits in one yamux message.
	if fw.Buffered() == 0 || w.Len() > flushThreshold || w.Len()+fw.Buffered() <= flushThreshold {
		t.Errorf("after automatic flush: %d buffered, %d written", fw.Buffered(), w.Len())
	}
	// A frame larger than the threshold goes out at once, alone.
	if err := fw.WriteFrame(make([]byte, flushThreshold+1)); err != nil {
		t.Fatal(err)
	}
	if fw.Buffered() != 0 || w.calls != 3 {
		t.Errorf("after a large frame: %d buffered, %d writes, want 0 and 3", fw.Buffered(), w.calls)
	}
}

func TestFrameWriterRejectsWithoutBreaking(t *testing.T) {
	var w countingWriter
	fw := NewFrameWriter(&w, 200)
	big := &Envelope{Kind: KindUser, Body: make([]byte, 300)}
	tests := []struct {
		name  string
		write func() error
		want  error
	}{
		{"envelope too large", func() error { return fw.WriteEnvelope(big) }, ErrFrameTooLarge},
		{"frame too large", func() error { return fw.WriteFrame(make([]byte, 201)) }, ErrFrameTooLarge},
		{"unknown kind", func() error { return fw.WriteEnvelope(&Envelope{}) }, ErrUnknownKind},
		{"bad name", func() error { return fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "\xff"}) }, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.write(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if fw.Buffered() != 0 {
				t.Fatalf("%d bytes buffered after a rejected frame", fw.Buffered())
			}
			if err := fw.WriteEnvelope(chatEnvelope(t, nil)); err != nil {
				t.Fatalf("writer unusable after rejection: %v", err)
			}
			if err := fw.Flush(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFrameWriterWriteFrame(t *testing.T) {
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf, 0)
	payload, err := AppendEnvelope(nil, chatEnvelope(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteFrame(payload); err != nil {
		t.Fatal(err)
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := NewFrameReader(&buf, 0).Next()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("Next() = %x, %v; want %x", got, err, payload)
	}
}

func TestFrameWriterErrorsAreSticky(t *testing.T) {
	errBoom := errors.New("boom")
	for name, w := range map[string]*countingWriter{
		"error": {err: errBoom},
		"short": {short: true},
	} {
		t.Run(name, func(t *testing.T) {
			fw := NewFrameWriter(w, 0)
			if err := fw.WriteEnvelope(chatEnvelope(t, nil)); err != nil {
				t.Fatal(err)
			}
			err := fw.Flush()
			if err == nil || !(errors.Is(err, errBoom) || errors.Is(err, io.ErrShortWrite)) {
				t.Fatalf("Flush: err = %v", err)
			}
			if err2 := fw.WriteEnvelope(chatEnvelope(t, nil)); err2 != err {
				t.Errorf("WriteEnvelope after failure: %v, want %v", err2, err)
			}
			if err2 := fw.WriteFrame([]byte{1}); err2 != err {
				t.Errorf("WriteFrame after failure: %v, want %v", err2, err)
			}
			if err2 := fw.Flush(); err2 != err {
				t.Errorf("Flush after failure: %v, want %v", err2, err)
			}
			if w.calls != 1 {
				t.Errorf("%d writes, want 1", w.calls)
			}
		})
	}
}

// timeoutWriter takes at most room bytes, then times out as a stream
// whose write deadline passed does, reporting what it took whole.
type timeoutWriter struct {
	bytes.Buffer
	room  int
	calls int
}

func (w *timeoutWriter) Write(p []byte) (int, error) {
	w.calls++
	n := min(len(p), w.room)
	w.room -= n
	w.Buffer.Write(p[:n])
	if n < len(p) {
		return n, os.ErrDeadlineExceeded
	}
	return n, nil
}

// A write that times out leaves the FrameWriter usable: what it did not
// write stays buffered, frames written meanwhile join it (automatic
// flushes do not fail), and the next Flush with room writes it all, in
// order, once.
func TestFrameWriterTimeoutKeepsTheRest(t *testing.T) {
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	type blob struct{ N int }
	MustRegister[blob](reg, "test.Blob")
	w := &timeoutWriter{room: 1000}
	fw := NewFrameWriter(w, 0)
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			_, body, err := reg.Encode(blob{i})
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.WriteEnvelope(&Envelope{Kind: KindUser, To: "sink", Type: "test.Blob", Body: body}); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
		}
	}
	put(0, 100)
	err = fw.Flush()
	if !errors.Is(err, ErrFlushTimedOut) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Flush: %v, want ErrFlushTimedOut wrapping the deadline", err)
	}
	if fw.Buffered() == 0 || w.Len() != 1000 {
		t.Fatalf("after the timeout: %d written, %d buffered", w.Len(), fw.Buffered())
	}
	// Past the automatic flush threshold: no automatic flush tries the
	// write again (each would copy the whole buffer).
	calls := w.calls
	put(100, 10_000)
	if fw.Buffered() <= flushThreshold || w.calls != calls {
		t.Fatalf("%d bytes buffered, %d writes tried after the timeout; want more than %d and none", fw.Buffered(), w.calls-calls, flushThreshold)
	}
	w.room = 1 << 30 // a new deadline
	if err := fw.Flush(); err != nil {
		t.Fatalf("Flush with room: %v", err)
	}
	if fw.Buffered() != 0 {
		t.Fatalf("%d bytes still buffered", fw.Buffered())
	}
	fr := NewFrameReader(&w.Buffer, 0)
	for i := range 10_000 {
		var env Envelope
		v, err := fr.ReadMessage(reg, &env)
		if err != nil || v != (blob{i}) {
			t.Fatalf("frame %d: %v, %v", i, v, err)
		}
	}
	var env Envelope
	if _, err := fr.ReadMessage(reg, &env); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}
