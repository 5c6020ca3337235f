package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// A link's writer goroutine, one per queue (user, control): it takes
// batches from its queue and puts them on its stream (send.go), and on a
// broken stream drops or declares what it held (loss.go).

// write is the writer goroutine of one queue: it takes a batch of queued
// envelopes at a time, encodes on this goroutine (never on an event
// loop), writes frames through a batching FrameWriter and flushes when
// the queue is empty. It holds the queue's writing right (linkstate.go)
// from start to end but while it sleeps with nothing in hand, dials and
// waits for a stream's end included: no write-through can take a
// batch's place meanwhile.
func (l *link) write(q *queue) {
	defer l.wg.Done()
	w := &q.w
	defer func() {
		if w.s != nil {
			_ = w.s.Close()
			l.track(w.s, false)
			w.s = nil
		}
		q.q.stop()
		fx := w.later
		w.later = effects{}
		l.perform(&fx)
	}()
	for {
		w.release() // what the last round left for the router and the actor system
		f := roundFacts{closed: l.r.ctx.Err() != nil, inHand: w.inHand()}
		var batch []outMsg
		if !f.closed {
			// With nothing else in hand, an empty queue takes the right
			// away: the next push wakes the writer, or writes itself
			// (writeThrough).
			// Nothing of w is read once take returned none with nothing
			// in hand: the right may be a caller's by then.
			done, s := w.batch[:0], w.s
			w.batch = nil                        // before the right may go: the next holder's
			batch = q.q.take(done, !f.inHand, s) // idle: link.retire may take the link
			f.taken, f.stream = len(batch), s != nil
			f.connGone = f.stream && (f.taken > 0 || f.inHand) && s.Conn().IsClosed()
		}
		switch f.next() {
		case moveReset:
			w.reset()
			return
		case moveSleep:
			// Asleep: the right is nobody's, and nothing of w may be
			// touched until takeBack.
			woke := roundFacts{woken: true}
			select {
			case <-q.q.ready:
			case <-l.closing:
				woke.drained = q.q.len() == 0 // everything queued was written
			case <-l.r.ctx.Done():
			}
			q.q.takeBack() // after a caller's write-through, if one holds the right
			woke.closed, woke.inHand = l.r.ctx.Err() != nil, w.inHand()
			switch woke.next() {
			case moveReset:
				w.reset()
				return
			case moveFinish:
				_ = finish(w.s) // the peer may take writeTimeout to read the rest
				return
			}
			continue
		case moveRenew:
			// The connection went away while the writer had nothing to
			// write (the peer disconnected, or restarted): a new stream,
			// before the batch is lost on the old one. Only a large
			// message in fragments was on its way.
			reason := connGone(l.peer, errors.New("connection closed"))
			w.lg.abandon(func(m *outMsg) { w.later.fail(l, m, reason) })
			w.dropDeclaring(nil)
		}
		// moveDial, moveWrite; moving off a relay may end the stream
		// first (relaymove.go), and the writer dials then.
		w.batch = batch
		w.moveOffRelay()
		w.release() // before dialing: what was given up goes back at once
		if w.s == nil && !w.dial() {
			return // closing: what was in hand is lost, as in reset
		}
		if w.s != nil {
			_ = w.send(time.Time{})
		}
		clear(w.batch)
	}
}

// dial opens the writer's stream. It holds no lock (the writer keeps its
// writing right): a slow NewStream or a backoff holds up nobody else. Its
// attempts and waits are dialState's (dialstate.go): after the last it
// gives up what is in hand (an Ask learns why at once) and its
// cancellations, and the writer redials for what comes next. It reports
// false when the router closes meanwhile.
func (w *writer) dial() bool {
	l, q := w.l, w.q
	var (
		s   network.Stream
		pw  *progressWriter
		fw  *codec.FrameWriter
		err error
	)
	d := dialState{unit: l.r.cfg.timings.backoffUnit}
	switch runDial(l.r.ctx, &d, func(attempt int) error {
		if s, pw, fw, err = l.open(q.proto, q.proto10); err != nil {
			l.r.log.Debug("routing: cannot open stream", "peer", l.peer, "protocol", q.proto, "attempt", attempt, "err", err)
		}
		return err
	}) {
	case doAbort:
		l.r.undeliverable.Add(uint64(len(w.batch))) // closing: lost, as in reset
		return false
	case doGiveUp:
		// Cancellations are dropped: a peer this far away drops our
		// monitors and links when the connection goes.
		for i := range w.batch {
			w.later.fail(l, &w.batch[i], fmt.Errorf("%w: %v: %w", ErrUnreachable, l.peer, err))
		}
		w.dropUndo("peer unreachable")
		w.later.unreachable = true
		return true
	}
	pw.waiting = &q.writing
	w.s, w.pw, w.fw, w.lg = s, pw, fw, nil
	if s.Protocol() == ProtoMsg {
		if w.lgState == nil {
			w.lgState = new(largeOut)
		}
		w.lg = w.lgState
	}
	return true
}

// runDial drives d from dialStart: it calls open for each attempt, and
// waits between two, until open succeeds (doUse), d gives up (doGiveUp)
// or ctx ends during a wait (doAbort), which it returns.
func runDial(ctx context.Context, d *dialState, open func(attempt int) error) dialDo {
	for a := d.step(dialStart); ; {
		switch a.do {
		case doDial:
			if open(a.attempt) == nil {
				a = d.step(dialOpened)
			} else {
				a = d.step(dialFailed)
			}
		case doWait:
			t := time.NewTimer(a.wait)
			select {
			case <-t.C:
				a = d.step(dialWaited)
			case <-ctx.Done():
				t.Stop()
				a = d.step(dialClosed)
			}
		default:
			return a.do
		}
	}
}

// inHand reports whether the writer has work besides its queue: a large
// message on its way, cancellations to send, frames a write-through's
// deadline left.
func (w *writer) inHand() bool {
	return (w.lg != nil && w.lg.active) || len(w.undo) > 0 || w.buffered()
}

// finish ends stream s of a writer that wrote everything it has: it
// closes s for writing and waits until the peer closes its side, which
// the peer's reader does once it handed every message to its actors (or
// until writeTimeout, or until the router's close gives up and resets
// the stream). Closing the connection before that could lose what the
// peer had not read yet. It returns nil once the peer closed its side.
// The writer calls it holding its writing right: no one writes on s.
func finish(s network.Stream) error {
	if s == nil {
		return nil
	}
	if err := s.CloseWrite(); err != nil {
		return err
	}
	_ = s.SetReadDeadline(time.Now().Add(writeTimeout))
	_, err := io.Copy(io.Discard, s) // nothing comes this way: EOF (nil), a reset or the deadline
	return err
}

// reset drops the stream when the router closes: what is in hand is lost.
func (w *writer) reset() {
	w.lg.abandon(func(*outMsg) { w.l.r.undeliverable.Add(1) })
	w.drop()
}

// dropDeclaring drops the stream, which broke with err (nil: its
// connection closed, which declares nothing), and declares the loss of
// what the peer may not have read when it is this node's to declare
// (lossAt): numbered now (drawLoss), so that the next stream's hello says
// so, and acted on once the lock is let go (lossDeclared).
func (w *writer) dropDeclaring(err error) {
	l := w.l
	lost := lossAt(w.s, err) && l.r.ctx.Err() == nil
	w.drop()
	if !lost {
		return
	}
	s := l.drawLoss()
	front := w.q == &l.ctl
	if front {
		// Before what was queued while its write hung, which was sent
		// after the loss.
		w.undo = slices.Insert(w.undo, 0, outMsg{to: lossTo, msg: lostBody{Session: s}, corr: s})
	}
	w.later.losses = append(w.later.losses, declared{s: s, why: err.Error(), push: !front})
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

// broken hands back what the writer had in hand when its stream broke
// with err: the batch, and a large message in fragments with the messages
// held behind it and those released since the last flush. At most once:
// they may or may not have arrived; each is handed back once (effects.fail), so
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
		w.later.fail(l, m, reason)
	}
	w.lg.abandon(func(m *outMsg) { w.later.fail(l, m, reason) })
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
	case transport.DownSignal, transport.DemonitorSignal, transport.UnlinkSignal, lostBody, resetBody:
		return true
	case transport.ExitSignal:
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
	case transport.MonitorSignal:
		//lint:ignore S1016 a demonitor is not a monitor that happens to have the same fields
		cancel = transport.DemonitorSignal{ID: sig.ID}
	case transport.LinkSignal:
		cancel = transport.UnlinkSignal{}
	default:
		return
	}
	w.undo = append(w.undo, outMsg{to: m.to, from: m.from, msg: cancel})
}
