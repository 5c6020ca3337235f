package eventloop

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

func newGroup(t *testing.T, opts ...Option) *Group {
	t.Helper()
	g, err := New(append([]Option{WithLogger(testutil.QuietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx, 0); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return g
}

func waitDone(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestProducersTasksRunExactlyOnce(t *testing.T) {
	const producers, perProducer = 8, 100_000
	// The watchdog is off: on an oversubscribed machine a preempted carrier
	// looks blocked, and a takeover lets two carriers of one loop run at
	// once, which the unsynchronized order check below would misread.
	g := newGroup(t, WithLoops(2), WithWatchdog(0))
	counts := make([]uint32, producers*perProducer)
	// Per loop, tasks run one at a time; check per-producer FIFO per loop too.
	lastSeen := make([][]int, g.Len())
	for i := range lastSeen {
		lastSeen[i] = make([]int, producers)
		for j := range lastSeen[i] {
			lastSeen[i][j] = -1
		}
	}
	var remaining atomic.Int64
	remaining.Store(producers * perProducer)
	done := make(chan struct{})
	var order atomic.Bool
	order.Store(true)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			l := g.Loop(p % g.Len())
			for i := range perProducer {
				err := l.Execute(func() {
					atomic.AddUint32(&counts[p*perProducer+i], 1)
					if lastSeen[l.idx][p] >= i {
						order.Store(false)
					}
					lastSeen[l.idx][p] = i
					if remaining.Add(-1) == 0 {
						close(done)
					}
				})
				if err != nil {
					t.Errorf("execute: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitDone(t, done, "all tasks")
	for i, c := range counts {
		if c != 1 {
			t.Fatalf("task %d ran %d times", i, c)
		}
	}
	if !order.Load() {
		t.Fatal("a producer's tasks ran out of order on one loop")
	}
}

func TestTimersFireInDeadlineOrderAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := New(WithLoops(1), WithLogger(testutil.QuietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		l := g.Loop(0)
		var mu sync.Mutex
		var fired []int
		delays := []int{50, 10, 40, 20, 30, 10}
		timers := make([]*Timer, len(delays))
		for i, d := range delays {
			timers[i] = l.Schedule(time.Duration(d)*time.Millisecond, func() {
				mu.Lock()
				fired = append(fired, i)
				mu.Unlock()
			})
		}
		if !timers[2].Cancel() {
			t.Fatal("cancel of a pending timer reported false")
		}
		if timers[2].Cancel() {
			t.Fatal("second cancel reported true")
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		got := append([]int(nil), fired...)
		mu.Unlock()
		want := []int{1, 5, 3, 4, 0} // by deadline, ties in scheduling order, 2 cancelled
		if len(got) != len(want) {
			t.Fatalf("fired %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("fired %v, want %v", got, want)
			}
		}
		if timers[0].Cancel() {
			t.Fatal("cancel after firing reported true")
		}
		if err := g.Shutdown(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNoTimerFiresAfterShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := New(WithLoops(2), WithLogger(testutil.QuietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		var fired atomic.Int32
		for i := range 100 {
			g.Loop(i%2).Schedule(time.Duration(i+1)*time.Millisecond, func() { fired.Add(1) })
		}
		time.Sleep(50*time.Millisecond + time.Microsecond)
		synctest.Wait()
		before := fired.Load()
		if before != 50 {
			t.Fatalf("%d timers fired in the first 50 ms, want 50", before)
		}
		if err := g.Shutdown(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		late := g.Loop(0).Schedule(time.Millisecond, func() { fired.Add(1) })
		time.Sleep(time.Second)
		synctest.Wait()
		if n := fired.Load(); n != before {
			t.Fatalf("%d timers fired after shutdown", n-before)
		}
		if late.Cancel() {
			t.Fatal("a timer scheduled after shutdown was pending")
		}
	})
}

func TestTimerCancelFromAnotherGoroutineFreesHeap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := New(WithLoops(1), WithLogger(testutil.QuietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		l := g.Loop(0)
		for range 1000 {
			l.Schedule(time.Hour, func() { t.Error("cancelled timer fired") }).Cancel()
		}
		synctest.Wait()
		heapLen := make(chan int, 1)
		l.Execute(func() { l.takeTimerReqs(); heapLen <- len(l.timers) })
		if n := <-heapLen; n != 0 {
			t.Fatalf("%d cancelled timers still in the heap", n)
		}
		if err := g.Shutdown(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestShutdownDrainsPendingTasks(t *testing.T) {
	g, err := New(WithLoops(2), WithLogger(testutil.QuietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	const n = 10_000
	for i := range n {
		l := g.Loop(i % 2)
		l.Execute(func() {
			ran.Add(1)
			// Tasks submitted while draining still run (quiet period).
			if i%100 == 0 {
				l.Execute(func() { ran.Add(1) })
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Shutdown(ctx, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := ran.Load(); got != n+n/100 {
		t.Fatalf("ran %d tasks, want %d", got, n+n/100)
	}
	if err := g.Loop(0).Execute(func() {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("execute after shutdown: %v, want ErrClosed", err)
	}
}

func TestShutdownDeadlineDropsTasks(t *testing.T) {
	g, err := New(WithLoops(1), WithLogger(testutil.QuietLogger()), WithWatchdog(0))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	l := g.Loop(0)
	l.Execute(func() { close(started); <-release })
	<-started
	for range 10 {
		l.Execute(func() {})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = g.Shutdown(ctx, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v, want deadline exceeded", err)
	}
	close(release)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := g.Shutdown(ctx2, 0); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	if d := g.dropped.Load(); d != 10 {
		t.Fatalf("dropped %d tasks, want 10", d)
	}
}

type panicky struct {
	Task
	got chan any
}

func (p *panicky) Run()                        { panic("boom") }
func (p *panicky) Recover(v any, stack []byte) { p.got <- v }

func TestPanicIsRecoveredOnceAndLoopLives(t *testing.T) {
	g := newGroup(t, WithLoops(1))
	p := &panicky{got: make(chan any, 1)}
	p.Init(p)
	if err := g.Loop(0).Submit(&p.Task); err != nil {
		t.Fatal(err)
	}
	if v := <-p.got; v != "boom" {
		t.Fatalf("recovered %v", v)
	}
	g.Loop(0).Execute(func() { panic("plain") }) // logged
	done := make(chan struct{})
	g.Loop(0).Execute(func() { close(done) })
	waitDone(t, done, "task after panics")
}

func TestInLoop(t *testing.T) {
	g := newGroup(t, WithLoops(2))
	if g.InLoop() || g.Loop(0).InLoop() {
		t.Fatal("test goroutine reported as in loop")
	}
	res := make(chan [3]bool, 1)
	g.Loop(1).Execute(func() { res <- [3]bool{g.InLoop(), g.Loop(1).InLoop(), g.Loop(0).InLoop()} })
	if r := <-res; r != [3]bool{true, true, false} {
		t.Fatalf("InLoop on loop 1: group=%v loop1=%v loop0=%v", r[0], r[1], r[2])
	}
}

func TestRoundRobinChooser(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		g := newGroup(t, WithLoops(n), WithWatchdog(0))
		seen := make([]int, n)
		for range 4 * n {
			seen[g.Next().Index()]++
		}
		for i, c := range seen {
			if c != 4 {
				t.Fatalf("n=%d: loop %d chosen %d times, want 4", n, i, c)
			}
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Option{WithLoops(0), WithWatchdog(-1), WithSpin(-1), WithMaxBatch(0), WithLogger(nil)} {
		if _, err := New(o); err == nil {
			t.Fatal("bad option accepted")
		}
	}
}
