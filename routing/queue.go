package routing

import (
	"context"
	"math"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
)

// outMsg is a message waiting in a link's queue: a transport.Envelope
// without the peers. The link implies the target's peer, and the sender
// is an actor of this peer (or none), whose peer the wire leaves out: the
// receiver takes the stream's remote peer. At 64 bytes, a queue chunk
// holds a third less memory for the garbage collector to scan than one of
// envelopes, and an element fills one cache line.
type outMsg struct {
	to, from string // actor names; from is empty for no sender
	msg      any
	corr     uint64
	reply    bool
}

// chunkSize is the most envelopes a writer takes at once: enough to fill
// many frames per write, few enough that a burst's envelopes never sit in
// one large buffer.
const chunkSize = 1024

// outQueue is a bounded queue of envelopes for one writer goroutine: a
// list of chunks of up to chunkSize envelopes. The writer takes the oldest
// chunk whole, so no envelope is copied out, and gives it back emptied for
// reuse while the burst lasts: a busy link holds about as many chunks as
// envelopes wait at the peak of its bursts, and allocates none. The first
// chunk grows with use, so an idle link costs a few words, not a chunk.
type outQueue struct {
	mu      sync.Mutex // guards the fields below
	chunks  [][]outMsg // queued from head on, oldest first
	head    int
	n       int        // envelopes queued
	spare   [][]outMsg // emptied full-size chunks, kept while a burst lasts
	first   []outMsg   // an emptied smaller chunk, kept for the next message
	max     int
	space   chan struct{} // closed and replaced when room appears and someone waits
	waiting bool
	small   int  // small batches in a row
	retired bool // its link is retired (see link.retire): it takes nothing
	// right is who may write: the writer, a caller writing through, or
	// nobody while the writer sleeps (linkstate.go). It changes hands
	// here only, under mu.
	right writeRight
	// idle says that the writer sleeps with nothing in hand, its stream
	// idleOn (nil: none): what link.retire needs of it. Set as the right
	// is given up (take, handBack); cleared by a batch taken and by a
	// hand-back that wakes the writer.
	idle   bool
	idleOn network.Stream

	ready chan struct{} // capacity 1: wakes the writer

	kinds kinds // of the n queued, by kind: what the rooms need (rooms.go)
	rooms rooms // bounds by kind, of max
}

func newOutQueue(max int) *outQueue {
	return &outQueue{max: max, rooms: roomsOf(max), ready: make(chan struct{}, 1), idle: true} // a new writer has nothing
}

// push appends e unless the queue is full for its kind (see rooms.admits).
func (q *outQueue) push(e *transport.Envelope) bool {
	return q.pushBelow(e.To.Name(), e.From.Name(), e.Msg, e.Corr, e.Reply, q.max)
}

// pushBelow appends a message (the fields of an outMsg) unless limit or
// more envelopes wait or, with a limit up to the queue's bound, the room
// of its kind is full (rooms.admits), and wakes the writer if it sleeps. (A
// limit above the bound is the router's own loss messages': no rooms.)
func (q *outQueue) pushBelow(to, from string, msg any, corr uint64, reply bool, limit int) bool {
	q.mu.Lock()
	if !q.appendLocked(to, from, msg, corr, reply, limit) {
		q.mu.Unlock()
		return false
	}
	q.unlockWaking(true)
	return true
}

// pushLost appends a loss declaration numbered n, whatever the queue's
// bound, unless the last message queued is one (not sent yet, nothing
// queued after it): then it takes the newer number, which covers the
// older declaration, and the queue does not grow. (Only the last: a
// monitor or link request queued after a declaration must stay after it.)
// A peer that asks for a declaration after every batch it gets and reads
// none of this node's control stream costs one message, not one a batch.
func (q *outQueue) pushLost(body lostBody, n uint64) bool {
	q.mu.Lock()
	if q.n > 0 && !q.retired {
		if c := q.chunks[len(q.chunks)-1]; len(c) > 0 && c[len(c)-1].to == lossTo {
			m := &c[len(c)-1]
			if _, ok := m.msg.(lostBody); ok {
				q.kinds.add(m.corr, false, -1)
				m.msg, m.corr = body, n
				q.kinds.add(n, false, 1)
				q.mu.Unlock()
				return true
			}
		}
	}
	ok := q.appendLocked(lossTo, "", body, n, false, math.MaxInt)
	q.unlockWaking(ok)
	return ok
}

// pushClaim appends a message as pushBelow does, up to the queue's bound
// and the room of its kind, but does not wake the writer: claimed says
// that the writer slept with nothing in hand and the caller took its
// writing right (evClaim), which it must hand back (handBack), having
// written the message itself (writer.writeThrough) or not.
func (q *outQueue) pushClaim(to, from string, msg any, corr uint64, reply bool) (ok, claimed bool) {
	q.mu.Lock()
	ok = q.appendLocked(to, from, msg, corr, reply, q.max)
	if ok {
		claimed = q.right.step(evClaim, false) == rightClaimed
	}
	q.mu.Unlock()
	return ok, claimed
}

// signal wakes the writer (ready has room for one wake-up: a second one
// adds nothing).
func (q *outQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// appendLocked appends a message unless limit or more envelopes wait or,
// with a limit up to the queue's bound, the room of its kind is full
// (rooms.admits), writing the fields straight into the queue's slot: no outMsg
// is built and copied.
func (q *outQueue) appendLocked(to, from string, msg any, corr uint64, reply bool, limit int) bool {
	if q.n >= limit || q.retired || limit <= q.max && !q.rooms.admits(q.n, q.kinds, corr, reply) {
		return false
	}
	last := len(q.chunks) - 1
	if last < 0 || len(q.chunks[last]) == cap(q.chunks[last]) {
		last = q.growLocked()
	}
	c := q.chunks[last]
	c = c[:len(c)+1]
	q.chunks[last] = c
	m := &c[len(c)-1]
	m.to, m.from, m.msg, m.corr, m.reply = to, from, msg, corr, reply
	q.n++
	q.kinds.add(corr, reply, 1)
	return true
}

// unlockWaking unlocks q and wakes its writer when it sleeps and appended
// says that something was queued (evPushed: the right goes to it).
func (q *outQueue) unlockWaking(appended bool) {
	wake := appended && q.right.step(evPushed, true) == rightSignal
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

// pushRun appends the messages of run, all from the actor named from,
// while the queue has room for each one's kind (rooms.admits), taking the lock
// once, and returns how many it appended: it stops at the first message
// refused, so that none of the rest overtakes it.
func (q *outQueue) pushRun(from string, run []transport.Outbound) int {
	q.mu.Lock()
	pushed := 0
	for pushed < len(run) && !q.retired {
		if o := &run[pushed]; !q.rooms.admits(q.n, q.kinds, o.Corr, o.Reply) {
			break // before growing: no empty chunk is left for takeBatch
		}
		last := len(q.chunks) - 1
		if last < 0 || len(q.chunks[last]) == cap(q.chunks[last]) {
			last = q.growLocked()
		}
		c := q.chunks[last]
		start, k := len(c), min(cap(c)-len(c), len(run)-pushed)
		c = c[:start+k]
		n, ks := q.n, q.kinds // in registers: the slots' stores cannot alias them
		i := 0
		for ; i < k; i++ {
			o := &run[pushed+i]
			if !q.rooms.admits(n, ks, o.Corr, o.Reply) {
				break
			}
			m := &c[start+i]
			m.to, m.from, m.msg, m.corr, m.reply = o.To.Name(), from, o.Msg, o.Corr, o.Reply
			n++
			ks.add(o.Corr, o.Reply, 1)
		}
		q.n, q.kinds = n, ks
		q.chunks[last] = c[:start+i]
		pushed += i
		if i < k {
			break // refused: none of the rest may overtake it
		}
	}
	q.unlockWaking(pushed > 0)
	return pushed
}

// waitLimit is the queue length from which pushCtx waits. A sender that
// can wait needs no deep queue to keep the writer busy (it takes at most
// chunkSize envelopes at a time), so it waits well before the queue is
// full:
// messages waiting in the queue cost memory, their bodies included. The
// rest of the queue is for senders that cannot wait (event loops).
const waitLimit = 8 * chunkSize

// pushCtx appends e, waiting until fewer than min(waitLimit, the queue's
// bound) envelopes wait and the room of its kind has space (rooms.admits), or ctx or stop ends. It reports ctx's error, or
// ErrClosed when stop closed first; or, without waiting,
// actor.ErrBlockingCall when it would wait and mustNotWait (if not nil)
// says that the caller must not, or errRetired when the queue's link is
// retired.
func (q *outQueue) pushCtx(ctx context.Context, e *transport.Envelope, stop <-chan struct{}, mustNotWait func() bool) error {
	limit := min(waitLimit, q.max)
	for {
		if q.pushBelow(e.To.Name(), e.From.Name(), e.Msg, e.Corr, e.Reply, limit) {
			return nil
		}
		q.mu.Lock()
		if q.retired { // before ErrBlockingCall: the caller takes the new link
			q.mu.Unlock()
			return errRetired
		}
		if mustNotWait != nil && mustNotWait() {
			q.mu.Unlock()
			return actor.ErrBlockingCall
		}
		if q.n < limit && q.rooms.admits(q.n, q.kinds, e.Corr, e.Reply) { // room appeared meanwhile
			q.mu.Unlock()
			continue
		}
		if q.space == nil {
			q.space = make(chan struct{})
		}
		q.waiting = true
		space := q.space
		q.mu.Unlock()
		select {
		case <-space:
		case <-stop:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// growLocked makes room for one more envelope at the end of the queue
// and returns the index of the chunk it goes to: the last chunk grown
// (only a first chunk smaller than chunkSize grows), or a new chunk.
func (q *outQueue) growLocked() int {
	last := len(q.chunks) - 1
	if last >= 0 && cap(q.chunks[last]) < chunkSize {
		c := q.chunks[last]
		nc := make([]outMsg, len(c), min(2*cap(c), chunkSize))
		copy(nc, c)
		q.chunks[last] = nc
		return last
	}
	var c []outMsg
	switch {
	case len(q.spare) > 0:
		c = q.spare[len(q.spare)-1]
		q.spare[len(q.spare)-1] = nil
		q.spare = q.spare[:len(q.spare)-1]
	case last < 0 && q.first != nil:
		c, q.first = q.first, nil
	case last >= 0:
		c = make([]outMsg, 0, chunkSize) // a burst: full size at once
	default:
		c = make([]outMsg, 0, 16)
	}
	q.chunks = append(q.chunks, c)
	return len(q.chunks) - 1
}

// keepLimit is the batch size below which a batch counts as small: after
// smallTakes small batches in a row a burst is over, and the queue drops
// its spare chunks. (A writer wakes on the first message of a burst, so
// one small batch says nothing.)
const (
	keepLimit  = chunkSize / 8
	smallTakes = 64
)

// takeBatch is take for a writer with nothing else in hand and no stream.
func (q *outQueue) takeBatch(done []outMsg) []outMsg { return q.take(done, true, nil) }

// take returns the oldest chunk of queued envelopes. When the queue is
// empty it returns none and, if sleep says that the writer has nothing
// else in hand, the writer gives up its writing right (evSleep) and is
// idle on stream s: the next push wakes it, or a caller writes through.
// done is the previous batch, whose envelopes the caller cleared: the
// queue keeps it for reuse while a burst lasts. The right's holder calls
// it.
func (q *outQueue) take(done []outMsg, sleep bool, s network.Stream) []outMsg {
	q.mu.Lock()
	var out []outMsg
	if q.head < len(q.chunks) {
		out = q.chunks[q.head]
		q.chunks[q.head] = nil
		q.head++
		switch {
		case q.head == len(q.chunks):
			q.chunks, q.head = q.chunks[:0], 0
		case q.head >= 16 && 2*q.head >= len(q.chunks):
			n := copy(q.chunks, q.chunks[q.head:])
			clear(q.chunks[n:])
			q.chunks, q.head = q.chunks[:n], 0
		}
		q.kinds.took(out, q.n)
		q.n -= len(out)
		q.idle, q.idleOn = false, nil
	} else if sleep {
		q.right.step(evSleep, false)
		q.idle, q.idleOn = true, s
	} else {
		q.idle, q.idleOn = false, nil // work in hand
	}
	switch {
	case len(out) == 0:
		// Not a batch: the writer goes to sleep.
	case len(out) >= keepLimit:
		q.small = 0
	case q.small < smallTakes:
		q.small++
	default:
		clear(q.spare)
		q.spare = q.spare[:0]
	}
	switch {
	case cap(done) == chunkSize:
		if len(q.spare) <= q.max/chunkSize && q.small < smallTakes {
			q.spare = append(q.spare, done[:0])
		}
	case cap(done) > 0:
		q.first = done[:0] // small: kept for a link's occasional messages
	}
	if q.waiting {
		close(q.space)
		q.space, q.waiting = nil, false
	}
	q.mu.Unlock()
	return out
}

// len returns how many envelopes wait.
func (q *outQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
