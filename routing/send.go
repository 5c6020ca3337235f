package routing

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/codec"
)

// How a writer puts its messages on its stream: batches, fragments of
// large messages, write-through from a caller's goroutine, and the write
// deadline that bounds a stall rather than a batch.

// writeTimeout bounds how long a writer's stream may go without progress:
// a peer that stops reading for this long (between half of it and all of
// it) breaks the stream. A slow but steady peer does not, however long a
// batch takes (see progressWriter).
const writeTimeout = 30 * time.Second

// progressWriter is a writer's stream as its FrameWriter writes to it. It
// writes in pieces of at most progressChunk and, under the writer's own
// deadline, moves the deadline on as the pieces go, so that writeTimeout
// bounds a stall rather than a whole batch: a batch of up to a thousand
// large messages to a peer that reads a few hundred KB/s may take minutes,
// and giving it up would declare its loss. Under a caller's deadline (see
// writer.send) it keeps that deadline.
type progressWriter struct {
	s       network.Stream
	caller  bool      // the deadline set is a caller's
	until   time.Time // the deadline set (zero: none yet)
	stalled bool      // a write met the deadline: it stays until the next arm
}

// progressChunk is the most a progressWriter writes at once.
const progressChunk = 64 << 10

func (p *progressWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k := min(len(b), progressChunk)
		if !p.caller {
			p.extend(time.Now())
		}
		m, err := p.s.Write(b[:k])
		n += m
		if err != nil {
			var ne net.Error
			p.stalled = p.stalled || errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
			return n, err
		}
		b = b[k:]
	}
	return n, nil
}

// extend sets the writer's own deadline writeTimeout from now once less
// than half of it is left (a deadline per piece would cost a timer update
// each).
func (p *progressWriter) extend(now time.Time) {
	if !p.stalled && p.until.Sub(now) < writeTimeout/2 {
		p.until = now.Add(writeTimeout)
		_ = p.s.SetWriteDeadline(p.until)
	}
}

// arm sets the deadline of the writes to come: a caller's (not zero), or
// the writer's own. It is set before anything is put: the FrameWriter
// flushes by itself once its buffer fills, and must not do so under a
// deadline that expired since the last write (an Ask's, or the writer's
// own after a long idle), which would break a healthy stream.
func (p *progressWriter) arm(caller time.Time) {
	p.stalled = false
	if !caller.IsZero() {
		p.caller, p.until = true, caller
		_ = p.s.SetWriteDeadline(caller)
		return
	}
	if p.caller {
		p.caller, p.until = false, time.Time{}
	}
	p.extend(time.Now())
}

// progress returns the progressWriter of the writer's stream (one made
// for it if the stream was given without one).
func (w *writer) progress() *progressWriter {
	if w.pw == nil || w.pw.s != w.s {
		w.pw = &progressWriter{s: w.s}
	}
	return w.pw
}

// send writes the batch in hand on the open stream and flushes; if the
// stream breaks, what was in hand goes back (broken) and the stream is
// dropped, to be opened anew for the next batch. A non-zero deadline
// earlier than the writer's own bounds this write (a caller's, see
// writeThrough); when it passes, the stream is kept and what was not
// written stays in its FrameWriter for the writer, which must not sleep
// while any is left (buffered): only the writer's own deadline (a peer that
// stopped reading) breaks a stream. It returns the stream's error.
func (w *writer) send(deadline time.Time) error {
	l, lg := w.l, w.lg
	callers := !deadline.IsZero() && deadline.Before(time.Now().Add(writeTimeout))
	if callers {
		w.progress().arm(deadline)
	} else {
		w.progress().arm(time.Time{})
	}
	err := w.put()
	if err == nil && lg != nil && lg.active && w.q.q.len() == 0 {
		err = l.idleFragment(w.fw, lg, &w.scratch, &w.later)
	}
	if err == nil {
		err = w.fw.Flush()
	}
	if err == nil {
		lg.settle()
		clear(w.undo)
		w.undo, w.breaks = w.undo[:0], 0
		return nil
	}
	if callers && errors.Is(err, codec.ErrFlushTimedOut) {
		// A caller's deadline passed (see writeThrough): the stream is
		// intact, and the writer writes the rest under its own.
		clear(w.undo) // sent with the rest, as the batch is
		w.undo, w.breaks = w.undo[:0], 0
		return err
	}
	l.r.log.Debug("routing: stream broke", "peer", l.peer, "protocol", w.q.proto, "err", err)
	w.broken(err)
	w.dropDeclaring(err)
	return err
}

// put encodes into the stream's FrameWriter the cancellations a broken
// stream left (undo), then the batch in hand.
func (w *writer) put() error {
	l := w.l
	if len(w.undo) > 0 {
		if err := l.putBatch(w.fw, w.undo, &w.scratch, false, nil, &w.later); err != nil {
			return err
		}
	}
	return l.putBatch(w.fw, w.batch, &w.scratch, w.q == &l.user, w.lg, &w.later)
}

// writeThrough is called by plain code that queued a message and found
// the writer asleep (see outQueue.pushClaim): it writes what is queued on
// the calling goroutine, saving the hand-off to the writer goroutine, when
// the writer sleeps with an open stream and nothing in hand, waiting until
// deadline at most (if not zero); otherwise, and for what was queued
// meanwhile, it wakes the writer. So does it when the writer has work left
// after the write: the rest of a large message, or cancellations to send
// after the stream broke. A panic on the way (a message's encoder) leaves
// the writer unlocked and awake.
func (w *writer) writeThrough(deadline time.Time) {
	wake, idle := true, false
	var on network.Stream
	defer func() { w.q.q.wakeIfQueued(wake, idle, on) }()
	if !w.mu.TryLock() {
		return // the writer is at work and will see what was queued
	}
	var fx effects
	defer func() { // before the wake-up
		fx, w.later = w.later, effects{}
		w.mu.Unlock()
		w.l.perform(&fx)
	}()
	if w.busy {
		return // the writer is at work, between rounds
	}
	if w.s != nil && !w.stopped && w.l.r.ctx.Err() == nil && !w.s.Conn().IsClosed() && (w.lg == nil || !w.lg.active) {
		w.batch = w.q.q.takeBatch(w.batch[:0])
		if n := len(w.batch); n > 0 {
			if w.send(deadline) == nil {
				w.l.r.writtenThrough.Add(uint64(n))
			}
			clear(w.batch)
		}
	}
	wake = len(w.undo) > 0 || (w.lg != nil && w.lg.active) || w.buffered()
	idle, on = !wake && !w.stopped, w.s
}

// buffered reports whether frames wait in the stream's FrameWriter: those
// a write-through's deadline cut short (see send).
func (w *writer) buffered() bool { return w.fw != nil && w.fw.Buffered() > 0 }

// putBatch encodes the envelopes of batch into fw, counting those sent,
// and returns the first stream error. user says that batch comes from the
// user queue, which holds no signals (see isControl). With lg (a 1.1.0 user
// stream), a large message goes out in fragments between the others, and
// what must wait behind it is held back (see large.go); a large message
// counts as sent with its last fragment.
func (l *link) putBatch(fw *codec.FrameWriter, batch []outMsg, scratch *[]byte, user bool, lg *largeOut, fx *effects) error {
	if user && len(batch) > 0 || !user && slices.ContainsFunc(batch, func(m outMsg) bool { return !isLoss(m.msg) }) {
		l.traffic.Store(true) // before any of it is written (see Router.asked)
	}
	sent := uint64(0)
	defer func() { l.counted(sent) }()
	for len(batch) > 0 {
		m := &batch[0]
		batch = batch[1:]
		if lg.holds(m) {
			lg.hold(m)
		} else {
			ok, err := l.put(fw, m, scratch, user, lg, fx)
			if err != nil {
				return err
			}
			if ok {
				sent++
			}
		}
		if lg == nil || !lg.active {
			continue
		}
		var (
			last bool
			err  error
		)
		switch {
		case len(lg.held) >= l.heldLimit():
			for !last && err == nil { // the rest at once
				last, err = l.nextFragment(fw, lg, scratch)
			}
		case lg.since >= fragmentData:
			last, err = l.nextFragment(fw, lg, scratch)
		}
		if err != nil {
			return err
		}
		if last {
			sent++
			batch = lg.complete(batch)
		}
	}
	return nil
}

// idleFragment writes the next fragment of the large message lg when
// nothing else waits, and after the last one what was held back.
func (l *link) idleFragment(fw *codec.FrameWriter, lg *largeOut, scratch *[]byte, fx *effects) error {
	l.traffic.Store(true)
	last, err := l.nextFragment(fw, lg, scratch)
	if err != nil || !last {
		return err
	}
	l.counted(1)
	return l.putBatch(fw, lg.complete(nil), scratch, true, lg, fx)
}

// counted counts n messages written to the link's streams.
func (l *link) counted(n uint64) {
	if n > 0 {
		l.r.sent.Add(n)
		l.r.countsOf(l.peer).sent.Add(n)
	}
}

// put encodes m into fw, encoding its body in scratch first, and reports
// whether it did. Errors about m itself (too large, unencodable) fail m and
// return a nil error; only stream errors are returned. user says that m is
// not a signal. With lg, a large m starts going out in fragments (put
// reports false: it counts when done) or, when another is on its way, is
// held back.
func (l *link) put(fw *codec.FrameWriter, m *outMsg, scratch *[]byte, user bool, lg *largeOut, fx *effects) (bool, error) {
	if m.to == "" {
		return false, nil
	}
	var (
		kind codec.Kind
		typ  string
		body []byte
		err  error
	)
	corr, loss := m.corr, false
	if user {
		kind, typ, body, err = appendUser(l.r.cfg.Registry, (*scratch)[:0], m.msg, m.reply)
	} else {
		if isLoss(m.msg) {
			if _, ok := m.msg.(resetBody); ok {
				l.resetQueued.Store(false) // the next request is queued anew
			}
			if m.corr <= l.lossFloor.Load() {
				return false, nil // stale: the peer left or restarted since
			}
			corr, loss = 0, true // m.corr numbers it here only
		}
		kind, typ, body, err = appendWire(l.r.cfg.Registry, (*scratch)[:0], m.msg, m.reply)
	}
	if cap(body) <= maxScratch {
		*scratch = body
	}
	if err != nil {
		l.r.encodeErrors.Add(1)
		fx.fail(l, m, err)
		return false, nil
	}
	if len(body) > fragmentData && lg != nil {
		switch {
		case len(body) > l.r.cfg.MaxFrame:
			l.r.tooLarge.Add(1)
			fx.fail(l, m, fmt.Errorf("%w: message of %d bytes exceeds limit of %d", ErrTooLarge, len(body), l.r.cfg.MaxFrame))
			return false, nil
		case lg.active:
			lg.hold(m) // one large message at a time
			return false, nil
		}
		// The body must stay as it is while its fragments go out: the
		// scratch buffer starts anew.
		*scratch = nil
		lg.start(m, kind, typ, body)
		_, err := l.nextFragment(fw, lg, scratch)
		return false, err
	}
	// Set field by field: a composite literal would be built aside and
	// copied in 16-byte moves, stalling on the 8-byte stores just made.
	var env codec.Envelope
	env.Kind, env.To, env.FromName, env.Type, env.Body, env.Corr = kind, m.to, m.from, typ, body, corr
	err = fw.WriteEnvelope(&env)
	switch {
	case err == nil && loss:
		return false, nil // not counted as sent, nor as traffic
	case err == nil:
		if lg != nil {
			lg.since += len(body)
		}
		return true, nil
	case errors.Is(err, codec.ErrFrameTooLarge):
		l.r.tooLarge.Add(1)
		fx.fail(l, m, fmt.Errorf("%w: %w", ErrTooLarge, err))
		return false, nil
	case errors.Is(err, codec.ErrMalformed):
		l.r.encodeErrors.Add(1)
		fx.fail(l, m, err)
		return false, nil
	}
	return false, err
}

// maxScratch is the largest body buffer a writer keeps between messages.
const maxScratch = 64 << 10
