package routing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
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

// When a stream breaks, each message the writer had in hand is handed back
// exactly once: a large message in fragments and those held behind it
// (moved out of the batch), and a message refused before the break (it
// was handed back then). A monitor request handed back is cancelled at the
// peer with a demonitor, since it may have arrived.
func TestBrokenStreamHandsBackEachMessageOnce(t *testing.T) {
	r, l, sys, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil { // fragments, signals
		t.Fatal(err)
	}
	msg := func(to string, size int) outMsg {
		return outMsg{to: to, from: "source", msg: benchBlob{Data: make([]byte, size)}}
	}
	for _, tc := range []struct {
		name  string
		batch []outMsg
		want  uint64 // handed back in all, by the refusal and the break
	}{
		{"large and held", []outMsg{msg("sink", 100<<10), msg("sink", 10), msg("sink", 10)}, 3},
		{"refused before the break", []outMsg{msg("sink", codec.DefaultMaxFrame+1), msg("sink", 10)}, 2},
		{"large, then another pair", []outMsg{msg("sink", 100<<10), msg("other", 10)}, 2},
		{"monitor", []outMsg{{to: "sink", from: "source", msg: actor.MonitorSignal{ID: 7}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, lettersBefore := r.undeliverable.Load(), sys.DeadLetters()
			_, signal := tc.batch[0].msg.(actor.MonitorSignal)
			lg := new(largeOut) // a user stream; a control stream has none
			if signal {
				lg = nil
			}
			w := &l.user.w
			if signal {
				w = &l.ctl.w
			}
			w.fw = codec.NewFrameWriter(io.Discard, r.cfg.MaxFrame, codec.WithCompact(true))
			w.batch, w.lg = tc.batch, lg
			if err := w.put(); err != nil {
				t.Fatal(err)
			}
			w.broken(errors.New("stream reset"))
			if got := r.undeliverable.Load() - before; got != tc.want {
				t.Fatalf("%d messages handed back, want %d", got, tc.want)
			}
			users := tc.want
			if signal {
				users = 0
				if len(w.undo) != 1 || w.undo[0].msg != (actor.DemonitorSignal{ID: 7}) || w.undo[0].to != "sink" || w.undo[0].from != "source" {
					t.Fatalf("kept after the break: %+v, want one demonitor of ID 7", w.undo)
				}
				w.undo = nil
			}
			if got := sys.DeadLetters() - lettersBefore; got != users {
				t.Fatalf("%d dead letters, want %d", got, users)
			}
		})
	}
}

// The cancellation of a monitor request handed back by a broken stream
// goes out first on the next stream, ahead of a new monitor of the same
// actors queued while the old stream was breaking: at the peer, the new
// monitor stays.
func TestCancellationPrecedesWhatWasQueuedMeanwhile(t *testing.T) {
	r, l, _, _ := newSender(t)
	if err := registerWire(r.cfg.Registry); err != nil {
		t.Fatal(err)
	}
	w := &l.ctl.w
	w.batch = append(w.batch[:0], outMsg{to: "sink", from: "source", msg: actor.MonitorSignal{ID: 7}})
	// Queued while the stream was breaking, after the batch in hand.
	if !l.ctl.q.pushBelow("sink", "source", actor.MonitorSignal{ID: 8}, 0, false, l.ctl.q.max) {
		t.Fatal("queue full")
	}
	w.broken(errors.New("stream reset"))
	// The next stream.
	var wire bytes.Buffer
	w.fw = codec.NewFrameWriter(&wire, r.cfg.MaxFrame)
	w.batch = l.ctl.q.takeBatch(w.batch[:0])
	if err := w.put(); err != nil {
		t.Fatal(err)
	}
	if err := w.fw.Flush(); err != nil {
		t.Fatal(err)
	}
	fr := codec.NewFrameReader(&wire, r.cfg.MaxFrame)
	var got []any
	for {
		var env codec.Envelope
		v, err := fr.ReadMessage(r.cfg.Registry, &env)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msg, _, err := fromValue(&env, v)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg)
	}
	want := []any{actor.DemonitorSignal{ID: 7}, actor.MonitorSignal{ID: 8}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("on the next stream: %+v, want %+v", got, want)
	}
}
