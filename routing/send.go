package routing

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/codec"
)

// How a writer puts its messages on its stream: a batch through its
// planner (plan.go: frames, fragments of large messages), write-through
// from a caller's goroutine, and the write deadline that bounds a stall
// rather than a batch.

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
	// waiting, when set, holds when the write s waits in began
	// (UnixNano; 0: none): its queue's, for the reply pause.
	waiting *atomic.Int64
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
		if p.waiting != nil {
			p.waiting.Store(time.Now().UnixNano())
		}
		m, err := p.s.Write(b[:k])
		if p.waiting != nil {
			p.waiting.Store(0)
		}
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
		if w.q != nil {
			w.pw.waiting = &w.q.writing
		}
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
		l.traffic.Store(true) // before it is written (see Router.asked)
		err = w.p.idleFragment(w.fw, lg)
		w.took()
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
// stream left (undo), then the batch in hand (the planner's work, which
// took then acts on).
func (w *writer) put() error {
	l := w.l
	defer w.took()
	w.p.floor = l.lossFloor.Load()
	if hasReset(w.undo) || hasReset(w.batch) {
		l.resetQueued.Store(false) // taken, to be sent or dropped: the next request is queued anew
	}
	if len(w.undo) > 0 {
		if hasTraffic(w.undo, false) {
			l.traffic.Store(true) // before any of it is written (see Router.asked)
		}
		if err := w.p.putBatch(w.fw, w.undo, false, nil); err != nil {
			return err
		}
	}
	user := w.q == &l.user
	if hasTraffic(w.batch, user) {
		l.traffic.Store(true)
	}
	return w.p.putBatch(w.fw, w.batch, user, w.lg)
}

// took acts on what the planner did: counts it, and keeps the messages
// that failed for after the lock (w.later).
func (w *writer) took() {
	l, d := w.l, &w.p.done
	l.counted(d.sent)
	if d.tooLarge > 0 {
		l.r.tooLarge.Add(d.tooLarge)
	}
	if d.encodeErrors > 0 {
		l.r.encodeErrors.Add(d.encodeErrors)
	}
	w.later.failed = append(w.later.failed, d.failed...)
	clear(d.failed)
	*d = planned{failed: d.failed[:0]}
}

// writeThrough is called by plain code that queued a message and took
// the writer's writing right from a sleeping writer (outQueue.pushClaim):
// it writes what is queued on the calling goroutine, saving the hand-off
// to the writer goroutine, when the writer has an open stream, waiting
// until deadline at most (if not zero). Then it hands the right back
// (outQueue.handBack): to the writer, woken, for what was queued
// meanwhile and for work left after the write (the rest of a large
// message, cancellations to send after the stream broke, frames a
// deadline cut short), and otherwise to nobody, the writer asleep. It
// leaves a stream over a relayed connection to the writer, which looks
// for a direct one between batches (relaymove.go): written through, a
// link that only asks use would stay on the relay until its limits cut
// the stream. A panic on the way (a message's encoder) hands the right
// back to the writer, woken.
func (w *writer) writeThrough(deadline time.Time) {
	q := w.q.q
	work := true
	defer func() {
		fx := w.later // moved out before the right goes: the next holder's
		w.later = effects{}
		q.handBack(work, w.s)
		w.l.perform(&fx)
	}()
	if w.s != nil && w.l.r.ctx.Err() == nil && !w.s.Conn().IsClosed() && !w.onRelay() && (w.lg == nil || !w.lg.active) {
		w.batch = q.take(w.batch[:0], false, nil)
		if n := len(w.batch); n > 0 {
			if w.send(deadline) == nil {
				w.l.r.writtenThrough.Add(uint64(n))
			}
			clear(w.batch)
		}
	}
	work = len(w.undo) > 0 || (w.lg != nil && w.lg.active) || w.buffered()
}

// buffered reports whether frames wait in the stream's FrameWriter: those
// a write-through's deadline cut short (see send).
func (w *writer) buffered() bool { return w.fw != nil && w.fw.Buffered() > 0 }

// counted counts n messages written to the link's streams.
func (l *link) counted(n uint64) {
	if n > 0 {
		l.r.sent.Add(n)
		l.r.countsOf(l.peer).sent.Add(n)
	}
}
