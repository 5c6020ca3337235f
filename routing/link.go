package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// queue is one direction of traffic to a peer: a bounded queue drained by
// one writer goroutine onto one long-lived stream.
type queue struct {
	proto, proto10 protocol.ID // offered in this order
	q              *outQueue
	w              writer
}

// writer is what the writer of a queue has in hand: its stream and the
// batch being written. mu is held while a batch is written: by the writer
// goroutine, which lets go of it only while it sleeps on an empty queue,
// or by plain code writing its own request through (writeThrough).
type writer struct {
	l       *link
	q       *queue
	mu      sync.Mutex
	s       network.Stream
	fw      *codec.FrameWriter
	pw      *progressWriter // under fw: s with its write deadline
	batch   []outMsg
	scratch []byte // one message body at a time
	// lg is the large message in fragments: only on user streams whose
	// reader knows fragments (1.1.0), nil otherwise.
	lg, lgState *largeOut
	// undo holds the demonitors and unlinks that cancel monitor and link
	// requests a broken stream handed back, and the signals it had in
	// hand that are sent again (see broken): the next stream carries
	// them first, ahead of whatever was queued meanwhile.
	undo    []outMsg
	breaks  int  // streams broken in a row; at maxBreaks, undo is dropped
	stopped bool // the writer goroutine returned
}

// maxBreaks is how many streams in a row may break before a writer drops
// the cancellations it keeps (undo) rather than reopen for them again.
const maxBreaks = 3

// link is everything this peer sends to one other peer.
type link struct {
	r         *Router
	peer      libp2ppeer.ID
	peerStr   string // peer.String()
	user, ctl queue
	closing   chan struct{} // closed by drain: write what is queued, then stop
	drainOnce sync.Once
	wg        sync.WaitGroup
	retired   atomic.Bool // see retire: its queues take nothing more
	// traffic says that messages went out since the last declared loss
	// (see Router.asked); resetQueued that a resetBody waits in the
	// control queue; loss messages numbered lossFloor or less are stale
	// (the peer disconnected or restarted since) and not sent.
	traffic, resetQueued atomic.Bool
	lossFloor            atomic.Uint64

	mu      sync.Mutex // guards streams
	streams map[network.Stream]struct{}
}

// track records an open outbound stream, so that abort can reset it even
// while its writer is blocked in a write.
func (l *link) track(s network.Stream, open bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if open {
		if l.streams == nil {
			l.streams = make(map[network.Stream]struct{})
		}
		l.streams[s] = struct{}{}
	} else {
		delete(l.streams, s)
	}
}

// abort resets every outbound stream of the link.
func (l *link) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.streams {
		_ = s.Reset()
	}
}

func newLink(r *Router, id libp2ppeer.ID, idStr string) *link {
	l := &link{
		r: r, peer: id, peerStr: idStr, closing: make(chan struct{}),
		user: queue{proto: ProtoMsg, proto10: ProtoMsg10, q: newOutQueue(r.cfg.LinkQueue)},
		ctl:  queue{proto: ProtoCtl, proto10: ProtoCtl10, q: newOutQueue(r.cfg.LinkQueue)},
	}
	l.user.w.l, l.user.w.q = l, &l.user
	l.ctl.w.l, l.ctl.w.q = l, &l.ctl
	return l
}

func (l *link) start() {
	l.wg.Add(2)
	go l.write(&l.user)
	go l.write(&l.ctl)
}

func (l *link) drain() { l.drainOnce.Do(func() { close(l.closing) }) }

// errRetired is what a push into a retired link's queue reports (pushCtx;
// the other pushes report false and the caller checks link.retired): the
// caller looks the peer's link up again, which makes a new one.
var errRetired = errors.New("routing: link retired")

// retire marks the link retired if it is idle: both writers asleep, with
// nothing queued, held back or to cancel, and no stream open on a live
// connection (the peer may not have read what it carried yet, and a new
// link's stream must not overtake it); its queues then take nothing more,
// and drain lets its writers stop. It reports whether it did. The
// caller removes the link from the router's maps first or after, under
// the router's lock, so that the next lookup makes a new link; a sender
// that still held this one finds it retired and looks again.
func (l *link) retire() bool {
	qs := [2]*queue{&l.user, &l.ctl}
	for i, q := range qs {
		if !q.w.mu.TryLock() { // the writer is at work (or a write-through)
			for _, p := range qs[:i] {
				p.w.mu.Unlock()
			}
			return false
		}
	}
	defer func() {
		for _, q := range qs {
			q.w.mu.Unlock()
		}
	}()
	for _, q := range qs {
		q.q.mu.Lock()
	}
	idle := true
	for _, q := range qs {
		w := &q.w
		idle = idle && q.q.n == 0 && len(w.batch) == 0 && len(w.undo) == 0 && (w.lg == nil || !w.lg.active) &&
			(w.s == nil || w.s.Conn().IsClosed()) // a stream on a live connection: what it carried may be unread
	}
	// A push that finds its queue retired checks l.retired to tell that
	// from a full queue: it is set before the queues let anyone in.
	l.retired.Store(idle)
	for _, q := range qs {
		q.q.retired = idle
		q.q.mu.Unlock()
	}
	if idle {
		l.drain()
	}
	return idle
}

// shut marks the link retired and its queues closed to new messages, busy
// or not, as the router closes: its writers still write what they hold
// (drain).
func (l *link) shut() {
	l.retired.Store(true)
	for _, q := range [2]*queue{&l.user, &l.ctl} {
		q.q.mu.Lock()
		q.q.retired = true
		q.q.mu.Unlock()
	}
}

// Control is implemented by the message types that travel on the control
// stream with the signals, so that they never wait behind user messages:
// the requests and replies of a peer's own services (name lookup, remote
// spawn).
type Control interface {
	// TroupeControl marks the type; it is never called.
	TroupeControl()
}

// isControl reports whether msg travels on the control stream.
func isControl(msg any) bool {
	switch msg.(type) {
	case actor.Signal, actor.Undeliverable, Control:
		return true
	}
	return false
}

func (l *link) queueFor(msg any) *outQueue { return l.queueOf(msg).q }

// queueOf returns the queue that msg travels on.
func (l *link) queueOf(msg any) *queue {
	if isControl(msg) {
		return &l.ctl
	}
	return &l.user
}

func (l *link) enqueueCtx(ctx context.Context, e *actor.Envelope) error {
	err := l.queueFor(e.Msg).pushCtx(ctx, e, l.closing, l.r.sys.System().InEventLoop)
	if err == ErrClosed && l.retired.Load() {
		err = errRetired // retired while it waited: closing is closed too
	}
	if err != nil && err != errRetired && ctx.Err() != nil {
		return fmt.Errorf("routing: waiting for queue space towards %v: %w", l.peer, err)
	}
	return err
}

// write is the writer goroutine of one queue: it takes a batch of queued
// envelopes at a time, encodes on this goroutine (never on an event loop), writes frames
// through a batching FrameWriter and flushes when the queue is empty.
func (l *link) write(q *queue) {
	defer l.wg.Done()
	w := &q.w
	w.mu.Lock()
	defer func() {
		if w.s != nil {
			_ = w.s.Close()
			l.track(w.s, false)
			w.s = nil
		}
		w.stopped = true
		w.mu.Unlock()
	}()
	for {
		select {
		case <-l.r.ctx.Done():
			w.reset()
			return
		default:
		}
		// An empty queue marks the writer as sleeping: the next push
		// wakes it through ready, or writes itself (writeThrough).
		w.batch = q.q.takeBatch(w.batch[:0])
		if len(w.batch) == 0 && (w.lg == nil || !w.lg.active) && len(w.undo) == 0 && !w.buffered() {
			w.mu.Unlock()
			stop := false
			select {
			case <-q.q.ready:
			case <-l.closing:
				stop = q.q.len() == 0 // everything queued was written
			case <-l.r.ctx.Done():
				stop = true
			}
			w.mu.Lock()
			if stop && l.r.ctx.Err() == nil && w.buffered() {
				stop = false // a write-through left frames to flush
			}
			if stop {
				if l.r.ctx.Err() != nil {
					w.reset()
				} else {
					w.finish()
				}
				return
			}
			continue
		}
		if w.s != nil && w.s.Conn().IsClosed() {
			// The connection went away while the writer had nothing to
			// write (the peer disconnected, or restarted): a new stream,
			// before the batch is lost on the old one. Only a large
			// message in fragments was on its way.
			reason := connGone(l.peer, errors.New("connection closed"))
			w.lg.abandon(func(m *outMsg) { l.fail(m, reason) })
			w.dropDeclaring(nil)
		}
		for attempts := 1; w.s == nil; attempts++ {
			var err error
			if w.s, w.pw, w.fw, err = l.open(q.proto, q.proto10); err == nil {
				w.lg = nil
				if w.s.Protocol() == ProtoMsg {
					if w.lgState == nil {
						w.lgState = new(largeOut)
					}
					w.lg = w.lgState
				}
				break
			}
			l.r.log.Debug("routing: cannot open stream", "peer", l.peer, "protocol", q.proto, "attempt", attempts, "err", err)
			if attempts == 3 {
				// Give up on what is in hand (an Ask learns why at once);
				// keep redialing for what comes next. Cancellations are
				// dropped: a peer this far away drops our monitors and
				// links when the connection goes.
				for i := range w.batch {
					l.fail(&w.batch[i], fmt.Errorf("%w: %v: %w", ErrUnreachable, l.peer, err))
				}
				w.dropUndo("peer unreachable")
				l.r.retireLater(l.peer)
				break
			}
			select {
			case <-time.After(backoff(attempts)):
			case <-l.r.ctx.Done():
				l.r.undeliverable.Add(uint64(len(w.batch))) // closing: lost, as in reset
				return
			}
		}
		if w.s != nil {
			_ = w.send(time.Time{})
		}
		clear(w.batch)
	}
}

// finish ends the stream of a writer that wrote everything queued: it
// closes the stream for writing and waits until the peer closes its side,
// which the peer's reader does once it handed every message to its actors
// (or until writeTimeout, or until the router's close gives up and resets
// the stream). Closing the connection before that could lose what the
// peer had not read yet.
func (w *writer) finish() {
	if w.s == nil || w.s.CloseWrite() != nil {
		return
	}
	_ = w.s.SetReadDeadline(time.Now().Add(writeTimeout))
	_, _ = io.Copy(io.Discard, w.s) // nothing comes this way: EOF, a reset or the deadline
}

// reset drops the stream when the router closes: what is in hand is lost.
func (w *writer) reset() {
	w.lg.abandon(func(*outMsg) { w.l.r.undeliverable.Add(1) })
	w.drop()
}

// dropDeclaring drops the stream, which broke with err (nil: its
// connection closed, which declares nothing), and declares the loss of
// what the peer may not have read when it is this node's to declare
// (Router.lossAt): after the drop, so that the next stream's hello says
// so.
func (w *writer) dropDeclaring(err error) {
	l := w.l
	lost := l.r.lossAt(w.s, err)
	w.drop()
	if !lost {
		return
	}
	why := "its connection closed"
	if err != nil {
		why = err.Error()
	}
	var front *writer
	if w.q == &l.ctl {
		front = w
	}
	l.r.declareLoss(l.peer, why, false, front)
}

// dropLoss notes that m, if it is a loss message, will not be sent: a
// request (resetBody) may be queued again.
func (l *link) dropLoss(m *outMsg) {
	if _, ok := m.msg.(resetBody); ok && m.to != "" {
		l.resetQueued.Store(false)
	}
}

// drop resets the stream and forgets it.
func (w *writer) drop() {
	if w.s != nil {
		_ = w.s.Reset()
		w.l.track(w.s, false)
	}
	w.s, w.pw, w.fw = nil, nil, nil
}

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
		err = l.idleFragment(w.fw, lg, &w.scratch)
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
		if err := l.putBatch(w.fw, w.undo, &w.scratch, false, nil); err != nil {
			return err
		}
	}
	return l.putBatch(w.fw, w.batch, &w.scratch, w.q == &l.user, w.lg)
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
	wake := true
	defer func() { w.q.q.wakeIfQueued(wake) }()
	if !w.mu.TryLock() {
		return // the writer is at work and will see what was queued
	}
	defer w.mu.Unlock() // before the wake-up
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
func (l *link) putBatch(fw *codec.FrameWriter, batch []outMsg, scratch *[]byte, user bool, lg *largeOut) error {
	if user && len(batch) > 0 || !user && slices.ContainsFunc(batch, func(m outMsg) bool { return !isLoss(m.msg) }) {
		l.traffic.Store(true) // before any of it is written (see Router.asked)
	}
	sent := uint64(0)
	defer func() { l.r.sent.Add(sent) }()
	for len(batch) > 0 {
		m := &batch[0]
		batch = batch[1:]
		if lg.holds(m) {
			lg.hold(m)
		} else {
			ok, err := l.put(fw, m, scratch, user, lg)
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
func (l *link) idleFragment(fw *codec.FrameWriter, lg *largeOut, scratch *[]byte) error {
	l.traffic.Store(true)
	last, err := l.nextFragment(fw, lg, scratch)
	if err != nil || !last {
		return err
	}
	l.r.sent.Add(1)
	return l.putBatch(fw, lg.complete(nil), scratch, true, lg)
}

// put encodes m into fw, encoding its body in scratch first, and reports
// whether it did. Errors about m itself (too large, unencodable) fail m and
// return a nil error; only stream errors are returned. user says that m is
// not a signal. With lg, a large m starts going out in fragments (put
// reports false: it counts when done) or, when another is on its way, is
// held back.
func (l *link) put(fw *codec.FrameWriter, m *outMsg, scratch *[]byte, user bool, lg *largeOut) (bool, error) {
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
		l.fail(m, err)
		return false, nil
	}
	if len(body) > fragmentData && lg != nil {
		switch {
		case len(body) > l.r.cfg.MaxFrame:
			l.r.tooLarge.Add(1)
			l.fail(m, fmt.Errorf("%w: message of %d bytes exceeds limit of %d", ErrTooLarge, len(body), l.r.cfg.MaxFrame))
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
		l.fail(m, fmt.Errorf("%w: %w", ErrTooLarge, err))
		return false, nil
	case errors.Is(err, codec.ErrMalformed):
		l.r.encodeErrors.Add(1)
		l.fail(m, err)
		return false, nil
	}
	return false, err
}

// broken hands back what the writer had in hand when its stream broke
// with err: the batch, and a large message in fragments with the messages
// held behind it and those released since the last flush. At most once:
// they may or may not have arrived; each is handed back once (fail), so
// that an Ask fails at once and a monitor or link fires, which undo then
// cancels at the peer. The signals that a second copy cannot harm (see
// sentAgain) go on the next stream instead: nothing else would tell the
// peer, whose connection may well stay up, that what it monitors or is
// linked to went down.
func (w *writer) broken(err error) {
	l := w.l
	reason := fmt.Errorf("%w: %v: %w", ErrStreamBroken, l.peer, err)
	if w.s != nil && w.s.Conn().IsClosed() {
		reason = connGone(l.peer, err)
	}
	if w.breaks++; w.breaks >= maxBreaks {
		// Streams open and break at once: stop reopening for the
		// cancellations (the peer is in trouble; if it goes away, it
		// drops our monitors and links itself).
		w.dropUndo("streams break at once")
		w.breaks = 0
	}
	for i := range w.batch {
		m := &w.batch[i]
		if m.to != "" && sentAgain(m.msg) {
			w.undo = append(w.undo, *m)
			continue
		}
		w.addUndo(m)
		l.fail(m, reason)
	}
	w.lg.abandon(func(m *outMsg) { l.fail(m, reason) })
}

// connGone is the reason given for what a stream had in hand when its
// connection went away, with err: the stream broke, and so did the
// connection to the node (actor.ErrNodeDown, as the disconnection that
// follows gives every other monitor and link).
func connGone(peer libp2ppeer.ID, err error) error {
	return fmt.Errorf("%w (%w): %v: %w", ErrStreamBroken, actor.ErrNodeDown, peer, err)
}

// sentAgain reports whether a signal whose stream broke is sent again on
// the next one rather than handed back: a Down, a linked exit, a demonitor
// or an unlink, which the peer ignores when it has it already (no monitor
// or link is left for it to end). Handed back, they would be lost: the
// actor system has nothing to do with them. So are the router's loss
// messages (see loss.go): a lostBody the peer has is ignored; a resetBody
// it has costs a second declaration at worst.
func sentAgain(msg any) bool {
	switch sig := msg.(type) {
	case actor.DownSignal, actor.DemonitorSignal, actor.UnlinkSignal, lostBody, resetBody:
		return true
	case actor.ExitSignal:
		return sig.Linked && !sig.Kill
	}
	return false
}

// logDroppedUndo is the message logged when a writer drops the
// cancellations it kept.
const logDroppedUndo = "routing: cancellations dropped"

// dropUndo forgets the cancellations kept for the next stream, for the
// reason why.
func (w *writer) dropUndo(why string) {
	if len(w.undo) > 0 {
		w.l.r.log.Debug(logDroppedUndo, "peer", w.l.peer, "count", len(w.undo), "why", why)
	}
	for i := range w.undo {
		w.l.dropLoss(&w.undo[i])
	}
	clear(w.undo)
	w.undo = w.undo[:0]
}

// addUndo keeps, for a monitor or link request handed back after its
// stream broke, the demonitor or unlink that cancels it: the request may
// have arrived, and the sender, told that it fired (Down or exit), keeps
// no monitor or link; the peer must keep none either. Cancelling what
// never arrived is harmless. The next stream carries the cancellation
// before anything queued since (a new monitor or link of the same actors,
// say), so that it cannot undo a later request. Other messages need
// nothing.
func (w *writer) addUndo(m *outMsg) {
	if m.to == "" {
		return
	}
	var cancel any
	switch sig := m.msg.(type) {
	case actor.MonitorSignal:
		//lint:ignore S1016 a demonitor is not a monitor that happens to have the same fields
		cancel = actor.DemonitorSignal{ID: sig.ID}
	case actor.LinkSignal:
		cancel = actor.UnlinkSignal{}
	default:
		return
	}
	w.undo = append(w.undo, outMsg{to: m.to, from: m.from, msg: cancel})
}

// maxScratch is the largest body buffer a writer keeps between messages.
const maxScratch = 64 << 10

// fail reports that m will not be sent, or may not have arrived, and hands
// it back to the actor system (actor.Port.Bounce): an Ask request is
// answered with Undeliverable so the asker fails fast, a monitor or link
// request fires as Down or exit, another message becomes a dead letter.
// An outMsg whose target was cleared (it moved elsewhere: see
// largeOut.hold) is skipped.
func (l *link) fail(m *outMsg, reason error) {
	if isLoss(m.msg) { // the router's own: nothing to hand back
		l.dropLoss(m)
		m.to = ""
	}
	if m.to == "" {
		return
	}
	// The names came from valid Refs, so NewRef does not fail.
	to, _ := actor.NewRef(l.peerStr, m.to)
	m.to = "" // handed back once: a later failure of its batch skips it
	l.r.undeliverable.Add(1)
	l.r.log.Debug("routing: message not sent", "to", to, "err", reason)
	var from actor.Ref
	if m.from != "" {
		from, _ = actor.NewRef(l.r.sys.Peer(), m.from)
	}
	l.r.sys.Bounce(actor.Envelope{To: to, From: from, Msg: m.msg, Corr: m.corr, Reply: m.reply}, reason)
}

// open opens a stream to the peer, offering the protocols in order of
// preference, and introduces this peer's incarnation. Its frames are
// compact if the peer chose a protocol version that has them.
func (l *link) open(protos ...protocol.ID) (network.Stream, *progressWriter, *codec.FrameWriter, error) {
	ctx, cancel := context.WithTimeout(l.r.ctx, 10*time.Second)
	defer cancel()
	s, err := l.r.h.NewStream(ctx, l.peer, protos...)
	if err != nil {
		return nil, nil, nil, err
	}
	l.track(s, true)
	pw := &progressWriter{s: s}
	fw := codec.NewFrameWriter(pw, l.r.cfg.MaxFrame, codec.WithCompact(isCompact(s.Protocol())))
	h := helloBody{Incarnation: l.r.incarnation, Stream: l.r.streams.Add(1)}
	if !isCtl(s.Protocol()) {
		l.r.mu.Lock()
		h.Lost = l.r.lost[l.peer]
		l.r.mu.Unlock()
	}
	_, body, err := l.r.cfg.Registry.Encode(h)
	if err == nil {
		err = fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, Type: typeHello, Body: body})
	}
	if err != nil {
		_ = s.Reset()
		l.track(s, false)
		return nil, nil, nil, err
	}
	return s, pw, fw, nil
}
