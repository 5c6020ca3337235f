package routing

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/codec"
)

// A queued message refused by the writer (too large for the frame limit)
// fails its Ask at once: the Undeliverable answer reaches the asker, whose
// Ref the writer rebuilds from the name its queue element kept.
func TestWriterFailsRefusedAsk(t *testing.T) {
	r, l, sys, to := newSender(t)
	if l.user.q.takeBatch(nil) != nil { // the writer sleeps: a push wakes it
		t.Fatal("a batch from an empty queue")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := sys.Ask(ctx, to, benchBlob{Data: make([]byte, 1000)})
		done <- result{v, err}
	}()
	var batch []outMsg
	for len(batch) == 0 { // the Ask queues its request
		select {
		case res := <-done:
			t.Fatalf("Ask returned %v, %v before its request was written", res.v, res.err)
		case <-l.user.q.ready:
		}
		batch = l.user.q.takeBatch(nil)
	}
	var scratch []byte
	if err := l.putBatch(codec.NewFrameWriter(io.Discard, 512), batch, &scratch, true, nil); err != nil {
		t.Fatal(err)
	}
	if res := <-done; !errors.Is(res.err, ErrTooLarge) {
		t.Fatalf("Ask = %v, %v; want an error wrapping ErrTooLarge", res.v, res.err)
	}
	if st := r.Stats(); st.TooLarge != 1 || st.Undeliverable != 1 || st.Sent != 0 {
		t.Fatalf("stats %+v", st)
	}
}
