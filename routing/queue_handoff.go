package routing

import "github.com/libp2p/go-libp2p/core/network"

// The queue's side of the writing right's hand-off (linkstate.go): a
// caller that took the right in pushClaim hands it back, the writer
// takes it back before it touches its fields, and a writer that returned
// stops it for good.

// handBack returns the writing right a caller of pushClaim took: to the
// writer, woken, if messages wait or work says that it has some (a
// spurious wake-up costs nothing; a missed one would strand the next
// message) or if it waits for the right; otherwise the right is free
// again and the writer idle on stream s.
func (q *outQueue) handBack(work bool, s network.Stream) {
	q.mu.Lock()
	wake := q.right.step(evHandBack, work || q.n > 0) == rightSignal
	if wake {
		q.idle, q.idleOn = false, nil
	} else if q.right.free() {
		q.idle, q.idleOn = true, s
	}
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

// takeBack gives the writer, woken, its writing right back: at once, or
// once the caller holding it hands it back (a write-through's writes are
// bounded by its deadline).
func (q *outQueue) takeBack() {
	for {
		q.mu.Lock()
		a := q.right.step(evTakeBack, false)
		q.mu.Unlock()
		if a == rightOwned {
			return
		}
		<-q.ready // the hand-back signals, as want asks
	}
}

// stop says that the writer returned: nobody claims the right any more.
func (q *outQueue) stop() {
	q.mu.Lock()
	q.right.step(evStop, false)
	q.mu.Unlock()
}
