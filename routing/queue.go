package routing

import (
	"context"
	"sync"

	"github.com/troupe-mesh/troupe/actor"
)

// outQueue is a bounded queue of envelopes for one writer goroutine. It
// grows with use up to its bound, so an idle link costs a few words, not
// its whole capacity. The writer takes everything queued at once by
// swapping buffers with the queue: no envelope is copied out, and the
// buffer the writer gives back (emptied) takes the next burst, so a busy
// link reuses two buffers instead of growing one per burst.
type outQueue struct {
	mu      sync.Mutex       // guards the fields below
	buf     []actor.Envelope // queued, oldest first
	max     int
	space   chan struct{} // closed and replaced when room appears and someone waits
	waiting bool
	small   int // small batches in a row

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
	if len(q.buf) >= limit {
		q.mu.Unlock()
		return false
	}
	if len(q.buf) == cap(q.buf) {
		q.growLocked()
	}
	q.buf = append(q.buf, e)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// waitLimit is the queue length from which pushCtx waits. A sender that
// can wait needs no deep queue to keep the writer busy (it takes what is
// queued while it writes the previous batch), so it waits well before the
// queue is full:
// messages waiting in the queue cost memory, their bodies included. The
// rest of the queue is for senders that cannot wait (event loops).
const waitLimit = 8 << 10

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
		if len(q.buf) < limit { // room appeared meanwhile
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

// growLocked makes room for more envelopes in q.buf, up to the bound.
func (q *outQueue) growLocked() {
	size := max(16, 2*cap(q.buf))
	if cap(q.buf) >= 4096 {
		size = cap(q.buf) + cap(q.buf)/2 // large: overshoot less
	}
	size = min(size, q.max)
	nb := make([]actor.Envelope, len(q.buf), size)
	copy(nb, q.buf)
	q.buf = nb
}

// keepLimit is the capacity above which the writer's emptied buffer is
// dropped rather than reused once a burst is over: after smallTakes
// batches in a row of fewer than keepLimit/8 envelopes. (A writer wakes
// on the first message of a burst, so one small batch says nothing.)
const (
	keepLimit  = 1024
	smallTakes = 64
)

// takeBatch returns every queued envelope, oldest first. done is the
// previous batch, whose envelopes the caller cleared: the queue reuses it
// for what comes next, unless it is large and the burst that needed it is
// over, so that its memory goes back.
func (q *outQueue) takeBatch(done []actor.Envelope) []actor.Envelope {
	done = done[:0]
	q.mu.Lock()
	out := q.buf
	if len(out) >= keepLimit/8 {
		q.small = 0
	} else if q.small++; q.small > smallTakes && cap(done) > keepLimit {
		done = nil // a burst is over: give its memory back
	}
	q.buf = done
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
	return len(q.buf)
}
