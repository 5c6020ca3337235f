package routing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

// A sender that can wait stops at waitLimit; one that cannot may fill the
// queue to its bound; taking a batch lets the waiting sender in.
func TestOutQueueWaitsBeforeItIsFull(t *testing.T) {
	q := newOutQueue(2 * waitLimit)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range waitLimit {
		if err := q.pushCtx(ctx, actor.Envelope{Corr: uint64(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if err := q.pushCtx(short, actor.Envelope{}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pushCtx at the wait limit: %v, want DeadlineExceeded", err)
	}
	for q.len() < 2*waitLimit {
		if !q.push(actor.Envelope{}) {
			t.Fatalf("push refused at %d of %d", q.len(), 2*waitLimit)
		}
	}
	if q.push(actor.Envelope{}) {
		t.Fatal("push accepted beyond the bound")
	}
	done := make(chan error, 1)
	go func() { done <- q.pushCtx(ctx, actor.Envelope{Corr: 1 << 40}, nil) }()
	// The waiting sender gets in once fewer than waitLimit wait.
	select {
	case err := <-done:
		t.Fatalf("pushCtx returned %v with %d waiting", err, q.len())
	case <-time.After(20 * time.Millisecond):
	}
	batch := q.takeBatch(nil)
	if len(batch) != 2*waitLimit {
		t.Fatalf("batch of %d, want %d", len(batch), 2*waitLimit)
	}
	for i := range waitLimit {
		if batch[i].Corr != uint64(i) {
			t.Fatalf("batch[%d].Corr = %d: out of order", i, batch[i].Corr)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := q.takeBatch(batch); len(got) != 1 || got[0].Corr != 1<<40 {
		t.Fatalf("second batch %v, want the waiting sender's envelope", got)
	}
}

// The writer's emptied buffer takes the next envelopes, unless it is large
// and the burst is over.
func TestOutQueueReusesTheWritersBuffer(t *testing.T) {
	q := newOutQueue(1 << 16)
	for range 100 {
		q.push(actor.Envelope{})
	}
	first := q.takeBatch(nil)
	q.push(actor.Envelope{Corr: 1})
	second := q.takeBatch(first)
	if len(second) != 1 || second[0].Corr != 1 {
		t.Fatalf("second batch %v", second)
	}
	q.push(actor.Envelope{Corr: 2})
	if third := q.takeBatch(second); &third[0] != &first[0] {
		t.Fatal("the first batch's buffer was not reused")
	}
	for range 4 * keepLimit {
		q.push(actor.Envelope{})
	}
	batch := q.takeBatch(nil)
	for i := range 2 * smallTakes {
		q.push(actor.Envelope{})
		batch = q.takeBatch(batch)
		q.mu.Lock()
		kept := cap(q.buf) > keepLimit || cap(batch) > keepLimit
		q.mu.Unlock()
		if i < smallTakes && !kept {
			t.Fatalf("large buffers dropped after %d small batches", i+1)
		}
		if i == 2*smallTakes-1 && kept {
			t.Fatal("large buffers kept after the burst")
		}
	}
}
