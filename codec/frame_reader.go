package codec

import (
	"errors"
	"fmt"
	"io"
)

// initialReadBuffer is the size of a FrameReader's buffer before any frame
// forces it to grow.
const initialReadBuffer = 32 << 10

// maxVarintLen is the longest frame length prefix accepted, in bytes.
const maxVarintLen = 9

// FrameReader reads length-prefixed frames from an io.Reader. It reads in
// large chunks into one reused buffer, so that many small frames cost one
// read call. A frame's declared length is checked against the maximum before
// any memory is allocated for it, and the buffer then grows only as data
// actually arrives, so a peer that lies about a length cannot make the
// reader allocate more than twice what it really sent.
//
// Errors come in two classes. A frame whose contents are bad (ErrMalformed
// or ErrUnknownKind from ReadEnvelope) has been consumed entirely: the
// stream is still in sync and the next frame can be read (on a compact
// stream, an envelope with bad contents leaves no previous header: see
// the package documentation). Of those, a malformed envelope also matches
// ErrMalformedEnvelope: a caller that trusts only peers that speak the
// protocol may take it as a reason to reset the stream. A bad frame
// header (ErrFrameTooLarge, an invalid length prefix), a stream that ends in
// the middle of a frame (ErrMalformed wrapping io.ErrUnexpectedEOF) and
// errors of the underlying reader break the stream: Err returns the error,
// every later call returns it, and the stream must be reset. A clean end of
// stream between frames is io.EOF.
//
// A FrameReader is not safe for concurrent use; it is meant to be owned by
// the one goroutine that reads a stream.
type FrameReader struct {
	r       io.Reader
	max     int
	compact bool
	buf     []byte
	start   int   // first unread byte in buf
	end     int   // end of valid data in buf
	rerr    error // error from r held back until buffered data is consumed
	err     error // sticky error: the stream is broken
	prev    header
	cache   streamCache
	budget  Budget // nil: nothing is charged
	charged int    // bytes of buf reserved from budget (beyond initialReadBuffer)
	last    int    // payload length of the last frame returned
}

// NewFrameReader returns a FrameReader on r that rejects frames larger than
// maxFrame bytes. maxFrame <= 0 selects DefaultMaxFrame; values above
// MaxFrameLimit are clamped. With WithCompact(true) it accepts the short
// envelopes of the compact format.
func NewFrameReader(r io.Reader, maxFrame int, opts ...FrameOption) *FrameReader {
	c := frameOptions(opts)
	return &FrameReader{r: r, max: maxFrameOrDefault(maxFrame), compact: c.compact, budget: c.budget}
}

// Err returns the error that broke the stream, or nil if the stream can
// still be read.
func (fr *FrameReader) Err() error { return fr.err }

// ReadEnvelope reads the next frame and decodes it into e as DecodeEnvelope
// does. e does not alias the reader's buffer, but it does share memory with
// other envelopes from the same reader, to save allocations: names seen
// recently on the stream are reused rather than allocated again, and the
// peer ID and body of a small envelope (up to 512 bytes together) are cut
// from a 4 KiB block shared with its neighbours. The slices never overlap and
// their capacity is clipped, so writing to or appending to one never
// affects another; but keeping one body alive keeps its block alive: copy a
// small body that is kept for long. See FrameReader for which errors leave
// the stream usable. A compact reader also decodes short envelopes, into
// the whole envelope they stand for.
func (fr *FrameReader) ReadEnvelope(e *Envelope) error {
	frame, err := fr.next()
	if err != nil {
		return err
	}
	_, err = fr.decode(frame, e, false)
	if err != nil && !errors.Is(err, ErrUnknownKind) {
		*e = Envelope{}
		return envelopeError{err}
	}
	return err
}

// envelopeError marks an error of decoding an envelope (not its body) as
// ErrMalformedEnvelope, keeping what it wraps.
type envelopeError struct{ err error }

func (e envelopeError) Error() string        { return e.err.Error() }
func (e envelopeError) Unwrap() error        { return e.err }
func (e envelopeError) Is(target error) bool { return target == ErrMalformedEnvelope }

// decode decodes the envelope in frame into e as parseEnvelope does, and
// on a compact stream decodes short envelopes and keeps track of the
// previous header. It returns the body; with aliasBody (ReadMessage) a
// short envelope's body is only returned, not stored in e.Body. A short
// envelope's fields that e already holds (from the previous frame) are not
// stored again: a pointer stored to memory costs a write barrier while
// the GC runs.
func (fr *FrameReader) decode(frame []byte, e *Envelope, aliasBody bool) ([]byte, error) {
	if !fr.compact {
		err := parseEnvelope(frame, e, &fr.cache, aliasBody)
		return e.Body, err
	}
	if len(frame) > 0 && frame[0] == majorArray<<5|envelopeFields { // the usual full envelope
		return fr.decodeFull(frame, e, aliasBody)
	}
	bodyB, bodyE, corr, short, err := parseShortEnvelope(frame)
	if !short {
		return fr.decodeFull(frame, e, aliasBody)
	}
	if err == nil && !fr.prev.ok {
		err = fmt.Errorf("%w: short envelope with no previous header on the stream", ErrMalformed)
	}
	if err != nil {
		fr.prev.ok = false
		return nil, err
	}
	h := &fr.prev
	peer, body := carve(&fr.cache, h.peer, frame[bodyB:bodyE], aliasBody)
	setBytes(&e.FromPeer, peer)
	if !aliasBody {
		e.Body = body
	}
	e.Kind, e.Corr = h.kind, corr
	setString(&e.To, h.to)
	setString(&e.FromName, h.from)
	setString(&e.Type, h.typ)
	return body, h.kindErr
}

// decodeFull decodes a full envelope on a compact stream: one that decodes
// (or has only an unknown kind) becomes the previous header; a malformed
// one leaves none.
func (fr *FrameReader) decodeFull(frame []byte, e *Envelope, aliasBody bool) ([]byte, error) {
	err := parseEnvelope(frame, e, &fr.cache, aliasBody)
	if err == nil || errors.Is(err, ErrUnknownKind) {
		fr.prev.set(e, err)
	} else {
		fr.prev.ok = false
	}
	return e.Body, err
}

// ReadMessage reads the next frame, decodes its envelope into e as
// ReadEnvelope does, and decodes the body with reg as Registry.Decode does,
// straight from the reader's buffer: the body is not copied first, and
// e.Body is left nil. The message shares memory with other messages from
// the same reader as ReadEnvelope's bodies do (byte strings of plain structs
// and the bodies of Raw messages are carved from shared blocks).
//
// A body that does not decode is reported with an error wrapping
// ErrMalformed, with e filled in; like an envelope with bad contents it has
// been consumed, and the stream is still in sync. See FrameReader for the
// other errors.
func (fr *FrameReader) ReadMessage(reg *Registry, e *Envelope) (any, error) {
	frame, err := fr.next()
	if err != nil {
		return nil, err
	}
	body, err := fr.decode(frame, e, true)
	if e.Body != nil {
		e.Body = nil
	}
	if err != nil {
		if !errors.Is(err, ErrUnknownKind) {
			*e = Envelope{}
			err = envelopeError{err}
		}
		return nil, err
	}
	return reg.decode(e.Type, body, &fr.cache, true)
}

// FrameLen returns the payload length of the last frame read (by Next,
// ReadEnvelope or ReadMessage): a reader whose limit is above what it
// accepts as one message can refuse that message alone.
func (fr *FrameReader) FrameLen() int { return fr.last }

// Pending returns how many bytes the reader holds that it has not yet
// returned as frames. Called by the underlying reader's Read (which the
// FrameReader calls only when it needs more data), it is more than 0
// exactly when the stream is in the middle of a frame.
func (fr *FrameReader) Pending() int { return fr.end - fr.start }

// PendingSize returns the length, prefix included, of the frame in the
// middle of which the reader is: 0 between frames or while the length
// prefix itself is incomplete (or over the varint's bytes). Like Pending,
// for the underlying reader's Read, which may bound the time the frame
// takes to arrive by its size.
func (fr *FrameReader) PendingSize() int {
	size, hdr := parseUvarint(fr.buf[fr.start:fr.end])
	if hdr <= 0 || size > uint64(MaxFrameLimit) {
		return 0
	}
	return hdr + int(size)
}

// Buffered reports whether a whole frame is buffered, so that the next
// call to Next, ReadEnvelope or ReadMessage returns without reading from
// the underlying reader. A caller that hands messages on in batches can
// use it to flush its batch before it would wait for the network.
func (fr *FrameReader) Buffered() bool {
	if fr.err != nil {
		return false
	}
	if n := fr.end - fr.start; n > 0 && fr.buf[fr.start] < 0x80 { // a one-byte length
		return int(fr.buf[fr.start]) < n
	}
	size, hdr := parseUvarint(fr.buf[fr.start:fr.end])
	return hdr > 0 && uint64(fr.end-fr.start-hdr) >= size
}

// Next returns the payload of the next frame. The slice aliases the reader's
// buffer and is valid only until the next call to Next or ReadEnvelope. On
// a compact stream, Next does not decode the frame and so cannot know
// whether it changed the header that short envelopes repeat: it forgets
// the previous header, so that a short envelope read next is malformed.
func (fr *FrameReader) Next() ([]byte, error) {
	fr.prev.ok = false
	return fr.next()
}

// next is Next for the reader's own decoding methods.
func (fr *FrameReader) next() ([]byte, error) {
	if fr.err != nil {
		return nil, fr.err
	}
	if fr.start == fr.end && len(fr.buf) > shrinkThreshold {
		fr.buf, fr.start, fr.end = nil, 0, 0
		if fr.charged > 0 {
			fr.budget.Release(fr.charged)
			fr.charged = 0
		}
	}
	var size uint64
	var hdr int
	for {
		size, hdr = parseUvarint(fr.buf[fr.start:fr.end])
		if hdr > 0 {
			break
		}
		if hdr < 0 {
			return nil, fr.fail(fmt.Errorf("%w: frame length is not a minimal unsigned varint of at most %d bytes", ErrMalformed, maxVarintLen))
		}
		if err := fr.readMore(fr.end - fr.start + 1); err != nil {
			if err == io.EOF && fr.start == fr.end {
				return nil, fr.fail(io.EOF)
			}
			return nil, fr.fail(truncated(err))
		}
	}
	if size > uint64(fr.max) {
		return nil, fr.fail(fmt.Errorf("%w: frame of %d bytes exceeds limit of %d", ErrFrameTooLarge, size, fr.max))
	}
	total := hdr + int(size)
	for fr.end-fr.start < total {
		if err := fr.readMore(total); err != nil {
			return nil, fr.fail(truncated(err))
		}
	}
	frame := fr.buf[fr.start+hdr : fr.start+total : fr.start+total]
	fr.last = int(size)
	fr.start += total
	if fr.start == fr.end {
		fr.start, fr.end = 0, 0
	}
	return frame, nil
}

// truncated maps an end of stream inside a frame to ErrMalformed.
func truncated(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: stream ended inside a frame: %w", ErrMalformed, io.ErrUnexpectedEOF)
	}
	return err
}

// fail records err as the reason the stream is broken and returns it.
func (fr *FrameReader) fail(err error) error {
	fr.err = err
	return err
}

// readMore performs one read from the underlying reader, after making room
// so that want bytes from fr.start can eventually fit. The buffer grows at
// most to twice its size per call and only when it is full, so its size
// stays within twice the data received.
func (fr *FrameReader) readMore(want int) error {
	if fr.rerr != nil {
		return fr.rerr
	}
	if fr.buf == nil {
		fr.buf = make([]byte, initialReadBuffer)
	}
	if fr.start+want > len(fr.buf) && fr.start > 0 {
		n := copy(fr.buf, fr.buf[fr.start:fr.end])
		fr.start, fr.end = 0, n
	}
	if fr.end == len(fr.buf) {
		size := min(want, 2*len(fr.buf))
		if fr.budget != nil {
			more := size - initialReadBuffer - fr.charged
			if err := fr.budget.Reserve(more); err != nil {
				fr.rerr = fmt.Errorf("%w: %d bytes more for a frame: %w", ErrBufferRefused, more, err)
				return fr.rerr
			}
			fr.charged += more
		}
		grown := make([]byte, size)
		copy(grown, fr.buf[fr.start:fr.end])
		fr.buf = grown
	}
	for range 100 {
		n, err := fr.r.Read(fr.buf[fr.end:])
		if n < 0 || n > len(fr.buf)-fr.end {
			fr.rerr = fmt.Errorf("codec: reader returned an invalid count %d", n)
			return fr.rerr
		}
		fr.end += n
		if err != nil {
			if n > 0 {
				fr.rerr = err
				return nil
			}
			fr.rerr = err
			return err
		}
		if n > 0 {
			return nil
		}
	}
	fr.rerr = io.ErrNoProgress
	return fr.rerr
}

// parseUvarint decodes an unsigned varint (multiformats unsigned-varint:
// little-endian base-128, minimal, at most maxVarintLen bytes) from the start
// of b. It returns the value and its length, 0 if b holds only a prefix, or
// -1 if the encoding is invalid.
func parseUvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b); i++ {
		if i == maxVarintLen {
			return 0, -1
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, -1 // not minimal
			}
			return v, i + 1
		}
	}
	if len(b) >= maxVarintLen {
		return 0, -1
	}
	return 0, 0
}
