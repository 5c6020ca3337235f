package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
)

// Frame size limits.
const (
	// DefaultMaxFrame is the default maximum frame payload: 4 MiB.
	DefaultMaxFrame = 4 << 20
	// MaxFrameLimit is the largest maximum frame size a FrameReader or
	// FrameWriter accepts: 1 GiB. Larger settings are clamped to it.
	MaxFrameLimit = 1 << 30
)

// flushThreshold is the most buffered data a FrameWriter holds before it
// flushes on its own, bounding its memory when the caller's queue does not
// drain. It is the largest payload of one yamux message (64 KiB with its
// 12-byte header), so that an automatic flush costs one multiplexer frame
// rather than a full one and a sliver.
const flushThreshold = 64<<10 - 12

// shrinkThreshold is the buffer capacity above which a FrameWriter or
// FrameReader returns to a small buffer once it is empty, so that one large
// frame does not pin memory for the life of a stream.
const shrinkThreshold = 256 << 10

// maxFrameOrDefault maps a configured maximum frame size to the one used.
func maxFrameOrDefault(n int) int {
	switch {
	case n <= 0:
		return DefaultMaxFrame
	case n > MaxFrameLimit:
		return MaxFrameLimit
	}
	return n
}

// FrameWriter writes length-prefixed frames to an io.Writer in batches.
// WriteEnvelope and WriteFrame append to an internal buffer; Flush hands the
// whole buffer to the underlying writer in one Write call. The caller should
// call Flush when its outgoing queue drains, so that a burst of messages
// costs one write. To bound memory, the buffer is also flushed before a
// frame would take it past 65,524 bytes (the largest yamux message
// payload), and at once after a frame that large by itself.
//
// A write error breaks the FrameWriter for good, except a timeout (the
// underlying writer's deadline passed): what was not written stays
// buffered, Flush reports ErrFlushTimedOut, and a later Flush, under a
// new deadline, writes the rest. Frames written meanwhile are buffered
// without bound, until that Flush.
//
// A FrameWriter is not safe for concurrent use; it is meant to be owned by
// the one goroutine that drains a stream's outgoing queue.
type FrameWriter struct {
	w       io.Writer
	max     int
	compact bool
	buf     []byte
	err     error      // sticky write error
	late    bool       // the last write timed out: no automatic flush until Flush
	valid   validNames // names of the last envelope validated
	prev    header     // of the last full envelope buffered (compact only)
}

// NewFrameWriter returns a FrameWriter on w that refuses frames larger than
// maxFrame bytes (the limit the remote FrameReader enforces). maxFrame <= 0
// selects DefaultMaxFrame; values above MaxFrameLimit are clamped. With
// WithCompact(true) it writes the compact format.
func NewFrameWriter(w io.Writer, maxFrame int, opts ...FrameOption) *FrameWriter {
	return &FrameWriter{w: w, max: maxFrameOrDefault(maxFrame), compact: frameOptions(opts).compact}
}

// WriteEnvelope encodes e and appends it to the buffer as one frame. An
// invalid envelope (ErrUnknownKind, ErrMalformed) or one larger than the
// maximum frame (ErrFrameTooLarge) is rejected and nothing is buffered; the
// writer stays usable. If the buffer reaches the flush threshold the frame is
// flushed, and a write error is returned and remembered: every later call
// returns it (a timeout is neither: see FrameWriter). A compact writer writes a short envelope when e has the header
// of the last full envelope it wrote, and a full one otherwise.
func (fw *FrameWriter) WriteEnvelope(e *Envelope) error {
	if fw.err != nil {
		return fw.err
	}
	if fw.compact && fw.prev.matches(e) {
		return fw.writeShort(e.Body, e.Corr)
	}
	n, err := envelopeSize(e, len(e.Body), &fw.valid)
	if err != nil {
		return err
	}
	if n > fw.max {
		return fmt.Errorf("%w: envelope of %d bytes exceeds limit of %d", ErrFrameTooLarge, n, fw.max)
	}
	if err := fw.room(uvarintLen(uint64(n)) + n); err != nil {
		return err
	}
	fw.buf = binary.AppendUvarint(fw.buf, uint64(n))
	fw.buf = appendEnvelope(fw.buf, e, n)
	if fw.compact {
		fw.prev.set(e, nil)
	}
	return fw.maybeFlush()
}

// writeShort appends a short envelope as one frame.
func (fw *FrameWriter) writeShort(body []byte, corr uint64) error {
	n := shortSize(body, corr)
	if n > fw.max {
		return fmt.Errorf("%w: envelope of %d bytes exceeds limit of %d", ErrFrameTooLarge, n, fw.max)
	}
	if err := fw.room(uvarintLen(uint64(n)) + n); err != nil {
		return err
	}
	fw.buf = binary.AppendUvarint(fw.buf, uint64(n))
	fw.buf = appendShort(fw.buf, body, corr, n)
	return fw.maybeFlush()
}

// WriteFrame appends p, which should hold one encoded envelope, to the
// buffer as one frame. It rejects a frame larger than the maximum with
// ErrFrameTooLarge and otherwise behaves like WriteEnvelope. p is copied.
// A compact writer does not look into p: it forgets the previous header,
// so that the next envelope it writes is a full one.
func (fw *FrameWriter) WriteFrame(p []byte) error {
	if fw.err != nil {
		return fw.err
	}
	if len(p) > fw.max {
		return fmt.Errorf("%w: frame of %d bytes exceeds limit of %d", ErrFrameTooLarge, len(p), fw.max)
	}
	if err := fw.room(uvarintLen(uint64(len(p))) + len(p)); err != nil {
		return err
	}
	fw.prev.ok = false
	fw.buf = binary.AppendUvarint(fw.buf, uint64(len(p)))
	fw.buf = append(fw.buf, p...)
	return fw.maybeFlush()
}

// room flushes the buffer first if a frame of size bytes would take it
// past the flush threshold.
func (fw *FrameWriter) room(size int) error {
	if len(fw.buf) > 0 && len(fw.buf)+size > flushThreshold {
		return fw.autoFlush()
	}
	return nil
}

// uvarintLen returns the length of the unsigned varint encoding of v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// maybeFlush flushes once the buffer reaches the flush threshold.
func (fw *FrameWriter) maybeFlush() error {
	if len(fw.buf) >= flushThreshold {
		return fw.autoFlush()
	}
	return nil
}

// autoFlush is a flush on the way (maybeFlush, room). One that timed out
// is not an error there: the frame goes to the buffer, and the caller's
// own Flush reports the timeout. The buffer then grows past the
// threshold, by the frames written until that Flush, which alone tries
// the write again (under a deadline that may be new).
func (fw *FrameWriter) autoFlush() error {
	if fw.late {
		return nil
	}
	if err := fw.Flush(); err != nil && !errors.Is(err, ErrFlushTimedOut) {
		return err
	}
	return nil
}

// isTimeout reports whether err is a write's deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// Flush writes all buffered frames to the underlying writer in one call.
// After a write error (including a short write, reported as
// io.ErrShortWrite) the writer is broken: the error is returned by this and
// every later call, and the stream should be reset. A write that timed out
// does not break it: Flush returns an error wrapping ErrFlushTimedOut and
// the write's own, and keeps what was not written for the next Flush.
func (fw *FrameWriter) Flush() error {
	if fw.err != nil {
		return fw.err
	}
	if len(fw.buf) == 0 {
		return nil
	}
	n, err := fw.w.Write(fw.buf)
	if err == nil && n < len(fw.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if isTimeout(err) && n >= 0 && n < len(fw.buf) {
			// A writer that times out reports what it wrote whole
			// (yamux, QUIC and the kernel do): the rest waits.
			if n > 0 {
				fw.buf = fw.buf[:copy(fw.buf, fw.buf[n:])]
			}
			fw.late = true
			return fmt.Errorf("%w: %w", ErrFlushTimedOut, err)
		}
		fw.err = fmt.Errorf("codec: flushing frames: %w", err)
		return fw.err
	}
	fw.late = false
	if cap(fw.buf) > shrinkThreshold {
		fw.buf = nil
	} else {
		fw.buf = fw.buf[:0]
	}
	return nil
}

// Buffered returns the number of bytes written to the buffer and not yet
// flushed.
func (fw *FrameWriter) Buffered() int { return len(fw.buf) }
