package routing

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestLogLimiterOncePerInterval: one line per key per interval, the next
// one with the count of those suppressed; keys are independent; beyond
// max keys the newcomers share a slot.
func TestLogLimiterOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &logLimiter{every: 10 * time.Second, max: 3}
		a := logKey{"A", "reset"}
		if ok, n := l.allow(a, time.Now()); !ok || n != 0 {
			t.Fatalf("first event: %v %d", ok, n)
		}
		for range 999 {
			if ok, _ := l.allow(a, time.Now()); ok {
				t.Fatal("an event within the interval was logged")
			}
		}
		if ok, _ := l.allow(logKey{"B", "reset"}, time.Now()); !ok {
			t.Fatal("another peer's first event was not logged")
		}
		if ok, _ := l.allow(logKey{"A", "other kind"}, time.Now()); !ok {
			t.Fatal("another kind's first event was not logged")
		}
		time.Sleep(9 * time.Second)
		if ok, _ := l.allow(a, time.Now()); ok {
			t.Fatal("logged before the interval ended")
		}
		time.Sleep(time.Second)
		if ok, n := l.allow(a, time.Now()); !ok || n != 1000 {
			t.Fatalf("after the interval: %v, suppressed %d; want true, 1000", ok, n)
		}
		// Full: the slots past their interval with nothing suppressed go
		// (B, A's other kind), C and D take their place, and E and F share
		// the overflow slot: one line between them.
		for i, p := range []string{"C", "D", "E", "F"} {
			ok, _ := l.allow(logKey{p, "reset"}, time.Now())
			if want := i < 3; ok != want {
				t.Fatalf("newcomer %s: logged %v, want %v", p, ok, want)
			}
		}
		if len(l.slots) != 4 {
			t.Fatalf("%d slots, want 3 and the overflow", len(l.slots))
		}
	})
}

// TestLogLimiterForgetsTheGone: peers that erred twice (one line, one
// suppressed) and went do not keep newcomers in the overflow slot once
// their interval is over.
func TestLogLimiterForgetsTheGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &logLimiter{every: 10 * time.Second, max: 3}
		for _, p := range []string{"A", "B", "C"} {
			l.allow(logKey{p, "reset"}, time.Now())
			l.allow(logKey{p, "reset"}, time.Now())
		}
		time.Sleep(10 * time.Second)
		for _, p := range []string{"D", "E"} {
			if ok, _ := l.allow(logKey{p, "reset"}, time.Now()); !ok {
				t.Fatalf("newcomer %s was not logged after the others' interval ended", p)
			}
		}
		if _, ok := l.slots[logKey{overflowPeer, "reset"}]; ok {
			t.Fatal("a newcomer went to the overflow slot")
		}
	})
}

// TestLogLimiterFullScansOnlyWhenSomethingCanGo: a table full of slots
// within their interval is not scanned for every event of a key beyond
// it, only again once the first interval ends.
func TestLogLimiterFullScansOnlyWhenSomethingCanGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &logLimiter{every: 10 * time.Second, max: 100}
		for i := range 100 {
			l.allow(logKey{string(rune('a' + i)), "reset"}, time.Now())
		}
		time.Sleep(time.Second)
		for i := range 1000 {
			l.allow(logKey{string(rune(1000 + i)), "reset"}, time.Now())
		}
		if l.scans != 1 {
			t.Fatalf("%d scans of a full table for 1,000 newcomers within the others' interval, want 1", l.scans)
		}
		time.Sleep(9 * time.Second) // the first 100's interval ends
		if ok, _ := l.allow(logKey{"late", "reset"}, time.Now()); !ok || l.scans != 2 {
			t.Fatalf("a newcomer once slots can go: logged %v after %d scans, want true after 2", ok, l.scans)
		}
		if _, ok := l.slots[logKey{"late", "reset"}]; !ok {
			t.Fatal("the newcomer did not get a slot of its own")
		}
	})
}

// countHandler counts the records at Warn and above.
type countHandler struct {
	mu *sync.Mutex
	n  *int
}

func (countHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h countHandler) Handle(context.Context, slog.Record) error {
	h.mu.Lock()
	*h.n++
	h.mu.Unlock()
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// TestBadStreamFloodLogsFewLines: one peer opening 300 streams of garbage
// has each reset and counted, and costs a few log lines, not one a
// stream.
func TestBadStreamFloodLogsFewLines(t *testing.T) {
	var mu sync.Mutex
	lines := 0
	h, r, _ := testPeerTuned(t, config{Logger: slog.New(countHandler{&mu, &lines})}, nil)
	first := newRawFrames(t, h)
	before := r.Stats().StreamsReset
	const streams = 300
	for i := range streams {
		rf := first
		if i > 0 {
			rf = first.another(h)
		}
		if _, err := rf.s.Write([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); err != nil {
			t.Fatal(err)
		}
		if !rf.reset() {
			t.Fatalf("garbage stream %d was not reset", i)
		}
		_ = rf.s.Reset() // frees its slot in the writer's resource manager
	}
	if got := r.Stats().StreamsReset - before; got != streams {
		t.Fatalf("%d streams reset counted, want %d", got, streams)
	}
	mu.Lock()
	defer mu.Unlock()
	if lines > 4 {
		t.Fatalf("%d log lines for %d bad streams of one peer; want a few", lines, streams)
	}
}
