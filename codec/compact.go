package codec

import (
	"fmt"
	"slices"
)

// Compact streams (/troupe/msg/1.1.0 and /troupe/ctl/1.1.0 in routing) may
// carry short envelopes, which repeat the header of the previous full
// envelope; see "Compact streams" in the package documentation. The
// writer's and the reader's view of "the previous header" must agree
// exactly, so both follow the rules written there.

// A FrameOption configures a FrameReader or a FrameWriter.
type FrameOption func(*frameConfig)

// frameConfig holds the settings FrameOptions make.
type frameConfig struct {
	compact bool
	budget  Budget
}

// WithCompact selects, when on, the compact frame format: a FrameWriter
// writes a short envelope whenever an envelope repeats the previous one's
// kind, To, FromPeer, FromName and Type, and a FrameReader accepts short
// envelopes. Both ends of a stream must agree, which is what negotiating
// a protocol version is for. Off (the default) is the format of protocol
// version 1.0.0, where a short envelope is malformed.
func WithCompact(on bool) FrameOption {
	return func(c *frameConfig) { c.compact = on }
}

// A Budget accounts for the memory a FrameReader holds for frames larger
// than its first buffer (32 KiB): in routing, the memory limits of the
// libp2p stream being read. Reserve and Release are called only from the
// goroutine that reads, and never concurrently.
type Budget interface {
	// Reserve is called before the reader holds n more bytes. An error
	// refuses them: the frame is not read and the stream is broken.
	Reserve(n int) error
	// Release returns n bytes reserved before, once the reader no longer
	// holds them.
	Release(n int)
}

// WithBudget charges b for a FrameReader's buffer beyond its first 32 KiB,
// as it grows for large frames; a growth b refuses breaks the stream with
// ErrBufferRefused. The reader releases what it reserved when it drops a
// large buffer between frames; what it holds when the stream ends is for
// the caller to release (in routing, libp2p does when the stream closes).
// A FrameWriter ignores the option.
func WithBudget(b Budget) FrameOption {
	return func(c *frameConfig) { c.budget = b }
}

// frameOptions applies opts.
func frameOptions(opts []FrameOption) frameConfig {
	var c frameConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// shortSize returns the length of the short envelope carrying body and
// corr: [body] when corr is 0, [body, corr] otherwise.
func shortSize(body []byte, corr uint64) int {
	n := 1 + headLen(uint64(len(body))) + len(body)
	if corr != 0 {
		n += headLen(corr)
	}
	return n
}

// appendShort appends the short envelope carrying body and corr, whose size
// n was computed by shortSize.
func appendShort(dst, body []byte, corr uint64, n int) []byte {
	off := len(dst)
	dst = slices.Grow(dst, n)[:off+n]
	b := dst[off:]
	b[0] = majorArray<<5 | 1
	if corr != 0 {
		b[0] = majorArray<<5 | 2
	}
	i := 1 + putHead(b[1:], majorBytes, uint64(len(body)))
	i += copy(b[i:], body)
	if corr != 0 {
		putHead(b[i:], majorUint, corr)
	}
	return dst
}

// header is what a short envelope repeats: the kind, target, sender and
// type of the last full envelope on a compact stream.
type header struct {
	ok      bool // a short envelope may follow
	kind    Kind
	to, typ string
	from    string
	peer    []byte // owned: a copy
	kindErr error  // a reader's ErrUnknownKind for kind, or nil
}

// set makes e's the header.
func (h *header) set(e *Envelope, kindErr error) {
	h.ok, h.kind, h.to, h.from, h.typ, h.kindErr = true, e.Kind, e.To, e.FromName, e.Type, kindErr
	h.peer = append(h.peer[:0], e.FromPeer...)
}

// matches reports whether e has this header.
func (h *header) matches(e *Envelope) bool {
	return h.ok && e.Kind == h.kind && e.To == h.to && e.FromName == h.from && e.Type == h.typ &&
		string(e.FromPeer) == string(h.peer)
}

// parseShortEnvelope parses a short envelope, [body] or [body, corr], and
// returns the offsets of the body's payload and the correlation ID. It
// reports short == false, having checked nothing, when data does not start
// with the head of an array of fewer than six fields: parseEnvelope then
// decodes (or rejects) it as a full envelope. With short == true, err says
// whether the short envelope is well formed: an array of one or two
// fields, a definite byte string and an unsigned integer, nothing after.
func parseShortEnvelope(d []byte) (bodyB, bodyE int, corr uint64, short bool, err error) {
	// Fast path: what writers produce, [body] or [body, corr] with a body
	// head of at most three bytes and any corr head.
	if len(d) >= 2 && (d[0] == majorArray<<5|1 || d[0] == majorArray<<5|2) {
		switch b := d[1]; {
		case b>>5 != majorBytes:
			goto slow
		case b&0x1f < aiOneByte:
			bodyB, bodyE = 2, 2+int(b&0x1f)
		case b&0x1f == aiOneByte && len(d) > 2:
			bodyB = 3
			bodyE = 3 + int(d[2])
		case b&0x1f == aiTwoBytes && len(d) > 3:
			bodyB = 4
			bodyE = 4 + (int(d[2])<<8 | int(d[3]))
		default:
			goto slow
		}
		i := bodyE
		if d[0] == majorArray<<5|1 {
			if i == len(d) {
				return bodyB, bodyE, 0, true, nil
			}
			goto slow
		}
		if i < len(d) && d[i]>>5 == majorUint {
			switch ai := d[i] & 0x1f; {
			case ai < aiOneByte && i+1 == len(d):
				return bodyB, bodyE, uint64(ai), true, nil
			case ai >= aiOneByte && ai <= aiEightBytes && len(d)-(i+1) == 1<<(ai-aiOneByte):
				for _, b := range d[i+1:] {
					corr = corr<<8 | uint64(b)
				}
				return bodyB, bodyE, corr, true, nil
			}
		}
	}
slow:
	r := envReader{data: d}
	n, herr := r.head(majorArray, "array")
	if herr != nil || n >= envelopeFields {
		return 0, 0, 0, false, nil
	}
	if n == 0 || n > maxShortFields {
		return 0, 0, 0, true, fmt.Errorf("%w: envelope has %d fields, want 1 or 2 (short) or %d..%d", ErrMalformed, n, envelopeFields, maxEnvelopeFields)
	}
	if bodyB, bodyE, err = r.str(majorBytes, "body", MaxFrameLimit); err != nil {
		return 0, 0, 0, true, err
	}
	if n == 2 {
		if corr, err = r.head(majorUint, "corr"); err != nil {
			return 0, 0, 0, true, err
		}
	}
	if r.off != len(d) {
		return 0, 0, 0, true, fmt.Errorf("%w: %d trailing bytes after envelope", ErrMalformed, len(d)-r.off)
	}
	return bodyB, bodyE, corr, true, nil
}
