package routing

// A queue's writing right, as a pure value: who may touch its writer's
// fields (stream, FrameWriter, planner, batch in hand, large message,
// cancellations, effects). Exactly one holder at a time: the writer
// goroutine at work, nobody while it sleeps with nothing in hand, or a
// caller writing its own request through (writer.writeThrough). The right
// changes hands only by the transitions below, made under the queue's
// lock (outQueue.mu), which orders what the last holder wrote before what
// the next one reads: the writer's fields need no lock of their own.
// The writer keeps the right through a dial or a stream's end; a caller
// then finds it taken and only queues (docs/routing.md, "The writer and
// its writing right").

// holder is who holds a queue's writing right.
type holder uint8

const (
	heldByWriter holder = iota // the writer goroutine, at work (a new writer too)
	heldByNone                 // free: the writer sleeps with nothing in hand
	heldByCaller               // a caller writing through (pushClaim took it)
	heldByGone                 // the writer returned: nobody writes any more
)

// rightEvent is what happens to a queue's writing right.
type rightEvent uint8

const (
	// evPushed: a message was queued; the writer is woken if it sleeps.
	evPushed rightEvent = iota
	// evClaim: a message was queued by a caller that would write it
	// through (pushClaim): it takes the right if it is free.
	evClaim
	// evSleep: the writer found its queue empty with nothing in hand and
	// gives the right up.
	evSleep
	// evTakeBack: the writer woke (a push, the link's drain, the router's
	// close) and takes the right back, or waits for a caller's hand-back.
	evTakeBack
	// evHandBack: the caller is done; the writer gets the right if it has
	// work (wake: messages queued meanwhile, frames left, cancellations,
	// fragments) or waits for it, and otherwise the right is free again.
	evHandBack
	// evStop: the writer returns.
	evStop
)

// rightAction is what a transition asks of its driver (outQueue).
type rightAction uint8

const (
	rightNone    rightAction = iota // nothing to do
	rightSignal                     // wake the writer: send on its ready channel
	rightClaimed                    // the caller holds the right: it writes through
	rightOwned                      // the writer holds the right
	rightWait                       // the writer waits on ready for the caller's hand-back
)

// writeRight is a queue's writing right.
type writeRight struct {
	holder holder
	// want says that the writer woke while a caller held the right, and
	// waits for it: the hand-off goes to the writer, work or not.
	want bool
}

// step applies ev to r and returns the action its driver takes. work
// says, for evHandBack, that the writer has something to do (messages
// queued, or work the caller left it).
func (r *writeRight) step(ev rightEvent, work bool) rightAction {
	switch ev {
	case evPushed:
		if r.holder == heldByNone {
			r.holder = heldByWriter
			return rightSignal
		}
	case evClaim:
		if r.holder == heldByNone {
			r.holder = heldByCaller
			return rightClaimed
		}
	case evSleep:
		if r.holder == heldByWriter {
			r.holder = heldByNone
		}
	case evTakeBack:
		switch r.holder {
		case heldByCaller:
			r.want = true
			return rightWait
		case heldByNone:
			r.holder = heldByWriter
		}
		return rightOwned
	case evHandBack:
		if r.holder != heldByCaller {
			return rightNone // not the caller's (a misuse): nothing changes hands
		}
		if work || r.want {
			r.holder, r.want = heldByWriter, false
			return rightSignal
		}
		r.holder = heldByNone
	case evStop:
		r.holder, r.want = heldByGone, false
	}
	return rightNone
}

// free reports whether nobody holds the right: the writer sleeps with
// nothing in hand.
func (r writeRight) free() bool { return r.holder == heldByNone }

// A writer's rounds, as a pure decision: what it knows at the top of a
// round or on waking (roundFacts) in, what it does next (roundMove) out.
// The writer goroutine (link.write) gathers the facts and does the move.

// roundFacts is what a writer knows at a decision point.
type roundFacts struct {
	closed   bool // the router closes
	woken    bool // the writer just woke from sleep (and took its right back)
	drained  bool // on waking: the link drains and nothing is queued
	taken    int  // messages in the batch just taken (not on waking)
	inHand   bool // a large message on its way, cancellations, frames left
	stream   bool // a stream is open
	connGone bool // its connection closed
}

// roundMove is what a writer does next.
type roundMove uint8

const (
	moveReset  roundMove = iota // the router closes: drop the stream, what is in hand is lost; return
	moveSleep                   // nothing to do: give the right up and wait
	moveFinish                  // drained: end the stream cleanly (finish); return
	moveAgain                   // woken for work: a new round
	moveRenew                   // the stream's connection went away: drop it first, then dial
	moveDial                    // no stream: open one, then write
	moveWrite                   // write the batch and what is in hand
)

// next returns the writer's move for f.
func (f roundFacts) next() roundMove {
	switch {
	case f.closed:
		return moveReset
	case f.woken && f.drained && !f.inHand:
		return moveFinish
	case f.woken:
		return moveAgain
	case f.taken == 0 && !f.inHand:
		return moveSleep
	case f.stream && f.connGone:
		return moveRenew
	case !f.stream:
		return moveDial
	}
	return moveWrite
}
