package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
)

// A sender that can wait stops at waitLimit; one that cannot may fill the
// queue to its bound (replies; other kinds to their rooms); taking a
// batch lets the waiting sender in.
func TestOutQueueWaitsBeforeItIsFull(t *testing.T) {
	q := newOutQueue(2 * waitLimit)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range waitLimit {
		if err := q.pushCtx(ctx, &transport.Envelope{Corr: uint64(i)}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if err := q.pushCtx(short, &transport.Envelope{}, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pushCtx at the wait limit: %v, want DeadlineExceeded", err)
	}
	// A caller that must not wait (an event loop) is refused at once.
	if err := q.pushCtx(ctx, &transport.Envelope{}, nil, func() bool { return true }); !errors.Is(err, actor.ErrBlockingCall) {
		t.Fatalf("pushCtx at the wait limit on an event loop: %v, want ErrBlockingCall", err)
	}
	// Replies may fill it (other kinds stop at their rooms: rooms_test.go).
	for q.len() < 2*waitLimit {
		if !q.push(&transport.Envelope{Corr: 1, Reply: true}) {
			t.Fatalf("push refused at %d of %d", q.len(), 2*waitLimit)
		}
	}
	if q.push(&transport.Envelope{Corr: 1, Reply: true}) {
		t.Fatal("push accepted beyond the bound")
	}
	done := make(chan error, 1)
	go func() { done <- q.pushCtx(ctx, &transport.Envelope{Corr: 1 << 40}, nil, nil) }()
	// The waiting sender gets in once fewer than waitLimit wait; batches
	// come oldest first, a chunk at a time.
	next := 0
	for q.len() >= waitLimit {
		select {
		case err := <-done:
			t.Fatalf("pushCtx returned %v with %d waiting", err, q.len())
		default:
		}
		batch := q.takeBatch(nil)
		if len(batch) != chunkSize {
			t.Fatalf("batch of %d, want %d", len(batch), chunkSize)
		}
		for _, e := range batch {
			if next < waitLimit && e.corr != uint64(next) {
				t.Fatalf("envelope %d has Corr %d: out of order", next, e.corr)
			}
			next++
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The writer's emptied chunks take the next envelopes while a burst lasts,
// and go once it is over.
func TestOutQueueReusesChunks(t *testing.T) {
	q := newOutQueue(1 << 16)
	for i := range 3 * chunkSize {
		q.push(&transport.Envelope{Corr: uint64(i)})
	}
	first := q.takeBatch(nil)
	if len(first) != chunkSize || first[0].corr != 0 {
		t.Fatalf("first batch: %d envelopes from %d", len(first), first[0].corr)
	}
	clear(first)
	second := q.takeBatch(first)
	if len(second) != chunkSize || second[0].corr != chunkSize {
		t.Fatalf("second batch: %d envelopes from %d", len(second), second[0].corr)
	}
	for range 2 * chunkSize {
		q.push(&transport.Envelope{})
	}
	q.mu.Lock()
	reused := &q.chunks[q.head+1][0] == &first[:1][0]
	q.mu.Unlock()
	if !reused {
		t.Fatal("the writer's emptied chunk was not reused")
	}
	batch := second
	for q.len() > 0 {
		clear(batch)
		batch = q.takeBatch(batch)
	}
	for range smallTakes + 1 {
		q.push(&transport.Envelope{})
		clear(batch)
		batch = q.takeBatch(batch)
	}
	q.mu.Lock()
	spare := len(q.spare)
	q.mu.Unlock()
	if spare != 0 {
		t.Fatalf("%d spare chunks kept after the burst", spare)
	}
	// A link's occasional messages reuse one small chunk.
	q = newOutQueue(1 << 16)
	q.push(&transport.Envelope{})
	batch = q.takeBatch(nil)
	if allocs := testing.AllocsPerRun(100, func() {
		q.push(&transport.Envelope{})
		clear(batch)
		batch = q.takeBatch(batch)
	}); allocs != 0 {
		t.Fatalf("%v allocations per message on a quiet link", allocs)
	}
}

// A queue that never empties keeps its list of chunks short.
func TestOutQueueNeverEmpty(t *testing.T) {
	q := newOutQueue(1 << 20)
	var batch []outMsg
	next := uint64(0)
	for i := range 200 * chunkSize {
		q.push(&transport.Envelope{Corr: uint64(i)})
		if i%chunkSize == chunkSize-1 && i > 4*chunkSize {
			clear(batch)
			batch = q.takeBatch(batch)
			for _, e := range batch {
				if e.corr != next {
					t.Fatalf("got %d, want %d", e.corr, next)
				}
				next++
			}
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.chunks) > 64 {
		t.Fatalf("%d chunk slots for %d chunks", len(q.chunks), len(q.chunks)-q.head)
	}
}

// The writer is woken only when it went to sleep on an empty queue: one
// signal for the first push after that, none while it is awake.
func TestOutQueueWakesASleepingWriter(t *testing.T) {
	q := newOutQueue(16)
	if b := q.takeBatch(nil); len(b) != 0 {
		t.Fatalf("batch of %d from an empty queue", len(b))
	}
	q.push(&transport.Envelope{Corr: 1})
	q.push(&transport.Envelope{Corr: 2})
	if len(q.ready) != 1 {
		t.Fatalf("%d wake-ups queued after pushes to a sleeping writer, want 1", len(q.ready))
	}
	<-q.ready
	if b := q.takeBatch(nil); len(b) != 2 || b[0].corr != 1 || b[1].corr != 2 {
		t.Fatalf("batch %+v, want corr 1 and 2", b)
	}
	q.push(&transport.Envelope{Corr: 3})
	if len(q.ready) != 0 {
		t.Fatal("a push woke a writer that was not asleep")
	}
	if b := q.takeBatch(nil); len(b) != 1 {
		t.Fatalf("batch of %d, want 1", len(b))
	}
	if b := q.takeBatch(nil); len(b) != 0 {
		t.Fatalf("batch of %d from an empty queue", len(b))
	}
	q.push(&transport.Envelope{Corr: 4})
	if len(q.ready) != 1 {
		t.Fatal("a push did not wake the sleeping writer")
	}
}

// A loss declaration queued behind another that is not sent yet takes its
// place with the newer number, unless something was queued in between,
// which must stay after the older one.
func TestQueuedDeclarationsCoalesce(t *testing.T) {
	q := newOutQueue(16)
	for n := uint64(1); n <= 100; n++ {
		if !q.pushLost(lostBody{Session: n}, n) {
			t.Fatal("refused")
		}
	}
	q.pushBelow("sink", "src", transport.MonitorSignal{ID: 1}, 0, false, q.max)
	q.pushLost(lostBody{Session: 101}, 101)
	q.pushLost(lostBody{Session: 102}, 102)
	var got []string
	for _, m := range q.takeBatch(nil) {
		got = append(got, fmt.Sprintf("%s %v %d", m.to, m.msg, m.corr))
	}
	want := []string{"troupe {100} 100", "sink {1} 0", "troupe {102} 102"}
	if !slices.Equal(got, want) {
		t.Fatalf("queued %q, want %q", got, want)
	}
}
