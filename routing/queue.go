package routing

import (
	"context"
	"sync"

	"github.com/troupe-mesh/troupe/actor"
)

// maxBatch is the most envelopes a writer takes at once: enough to fill
// many frames per write, few enough to keep the copy small.
const maxBatch = 1024

// outQueue is a bounded queue of envelopes for one writer goroutine. It
// grows with use up to its bound, so an idle link costs a few words, not
// its whole capacity, and the writer takes many envelopes per step.
type outQueue struct {
	mu      sync.Mutex // guards the fields below
	buf     []actor.Envelope
	head, n int
	max     int
	space   chan struct{} // closed and replaced when room appears and someone waits
	waiting bool

	ready chan struct{} // capacity 1: wakes the writer
}

func newOutQueue(max int) *outQueue {
	return &outQueue{max: max, ready: make(chan struct{}, 1)}
}

// push appends e unless the queue is full.
func (q *outQueue) push(e actor.Envelope) bool { return q.pushBelow(e, q.max) }

// pushBelow appends e unless limit or more envelopes wait.
func (q *outQueue) pushBelow(e actor.Envelope, limit int) bool {
	q.mu.Lock()
	if q.n >= limit {
		q.mu.Unlock()
		return false
	}
	if q.n == len(q.buf) {
		q.growLocked()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = e
	q.n++
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// waitLimit is the queue length from which pushCtx waits. A sender that
// can wait needs no deep queue to keep the writer busy (it takes at most
// maxBatch envelopes at a time), so it waits well before the queue is full:
// messages waiting in the queue cost memory, their bodies included. The
// rest of the queue is for senders that cannot wait (event loops).
const waitLimit = 8 * maxBatch

// pushCtx appends e, waiting until fewer than min(waitLimit, the queue's
// bound) envelopes wait, or ctx or stop ends. It reports ctx's error, or
// ErrClosed when stop closed first.
func (q *outQueue) pushCtx(ctx context.Context, e actor.Envelope, stop <-chan struct{}) error {
	limit := min(waitLimit, q.max)
	for {
		if q.pushBelow(e, limit) {
			return nil
		}
		q.mu.Lock()
		if q.n < limit { // room appeared meanwhile
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

func (q *outQueue) growLocked() {
	size := max(16, 2*len(q.buf))
	if len(q.buf) >= 4096 {
		size = len(q.buf) + len(q.buf)/2 // large: overshoot less
	}
	size = min(size, q.max)
	nb := make([]actor.Envelope, size)
	for i := range q.n {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

// takeBatch moves up to maxBatch of the oldest envelopes to dst and
// returns it.
func (q *outQueue) takeBatch(dst []actor.Envelope) []actor.Envelope {
	q.mu.Lock()
	k := min(q.n, maxBatch)
	for i := range k {
		j := (q.head + i) % len(q.buf)
		dst = append(dst, q.buf[j])
		q.buf[j] = actor.Envelope{}
	}
	q.n -= k
	if q.n == 0 {
		q.head = 0
		if len(q.buf) > 1024 && k < len(q.buf)/8 {
			q.buf = nil // a burst is over: give its memory back
		}
	} else {
		q.head = (q.head + k) % len(q.buf)
	}
	if q.waiting {
		close(q.space)
		q.space, q.waiting = nil, false
	}
	q.mu.Unlock()
	return dst
}

// len returns how many envelopes wait.
func (q *outQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
