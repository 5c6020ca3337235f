package eventloop

import (
	"sync/atomic"
	"testing"
	"time"
)

type named struct {
	Task
	f func()
}

func (n *named) Run()           { n.f() }
func (n *named) String() string { return "blocker" }

func TestWatchdogMovesLoopOffBlockedTask(t *testing.T) {
	blocked := make(chan string, 1)
	g := newGroup(t, WithLoops(1), WithWatchdog(20*time.Millisecond),
		WithBlockedHook(func(loop int, task string) { blocked <- task }))
	l := g.Loop(0)
	release := make(chan struct{})
	var running, overlap atomic.Int32
	b := &named{}
	b.f = func() {
		if running.Add(1) > 1 {
			overlap.Store(1)
		}
		<-release
		running.Add(-1)
	}
	b.Init(b)
	if err := l.Submit(&b.Task); err != nil {
		t.Fatal(err)
	}
	// Tasks queued behind the blocked one still run.
	done := make(chan struct{})
	var n atomic.Int32
	for range 1000 {
		l.Execute(func() {
			if n.Add(1) == 1000 {
				close(done)
			}
		})
	}
	waitDone(t, done, "tasks behind a blocked task")
	select {
	case name := <-blocked:
		if name != "blocker" {
			t.Fatalf("blocked task reported as %q", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watchdog did not report")
	}
	if g.Replacements() != 1 {
		t.Fatalf("replacements = %d, want 1", g.Replacements())
	}
	close(release)
	// The loop keeps working on its new carrier; the old one retires.
	again := make(chan struct{})
	l.Execute(func() { close(again) })
	waitDone(t, again, "task after release")
	if overlap.Load() != 0 {
		t.Fatal("blocked task ran twice at once")
	}
}
