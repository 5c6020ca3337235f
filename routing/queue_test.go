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
	for q.len() >= waitLimit {
		select {
		case err := <-done:
			t.Fatalf("pushCtx returned %v with %d waiting", err, q.len())
		default:
		}
		if batch := q.takeBatch(nil); len(batch) != maxBatch {
			t.Fatalf("batch of %d, want %d", len(batch), maxBatch)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
