package actor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// gcPercent and heapGoal read the runtime's GC percent and heap goal.
func gcPercent() int   { return int(readMetric("/gc/gogc:percent")) }
func heapGoal() uint64 { return readMetric("/gc/heap/goal:bytes") }

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// withGCEnv makes the floor see env as the process's environment, and
// checks that no system holds a floor before and after the test.
func withGCEnv(t *testing.T, env map[string]string) {
	t.Helper()
	f := &gcFloor
	// A system of an earlier test may still be shutting down on another
	// goroutine: it has a few seconds to finish.
	testutil.EventuallyNil(t, 5*time.Second, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.floors) == 0 {
			return nil
		}
		var running []string
		for s := range f.floors {
			running = append(running, fmt.Sprintf("a system with actors %v (%d live)", s.Names(), s.Actors()))
		}
		return fmt.Errorf("%d systems hold a GC floor before the test: %s", len(f.floors), strings.Join(running, "; "))
	})
	f.mu.Lock()
	old := f.env
	f.env = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f.mu.Unlock()
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.env, f.yielded = old, false
		if len(f.floors) != 0 {
			t.Errorf("%d systems hold a GC floor after the test", len(f.floors))
		}
	})
}

func shutdown(t *testing.T, s *System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// garbage allocates n bytes in 1 KiB objects that die at once and returns
// how many collections ran meanwhile.
func garbage(n int) uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.NumGC
	for range n >> 10 {
		sink = make([]byte, 1<<10)
	}
	sink = nil
	runtime.ReadMemStats(&m)
	return m.NumGC - before
}

var sink []byte

func TestGCHeapFloorCutsCollectionsAndShutdownRestores(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory changes the heap")
	}
	withGCEnv(t, nil)
	runtime.GC()
	prev := gcPercent()

	off, err := New(WithGCHeapFloor(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = off.Shutdown(context.Background()) }) // again, harmless; also when a check below fails: later tests need no floor held
	goalOff := heapGoal()
	if f := off.GCHeapFloor(); f.Bytes != 0 || f.Reason != "off" || gcPercent() != prev {
		t.Fatalf("floor 0: %+v, GOGC %d (was %d)", f, gcPercent(), prev)
	}
	gcsOff := garbage(256 << 20)
	shutdown(t, off)

	runtime.GC()
	on, err := New() // the default floor
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = on.Shutdown(context.Background()) })
	f := on.GCHeapFloor()
	if f.Bytes != DefaultGCHeapFloor || f.GOGC <= prev || gcPercent() != f.GOGC {
		t.Fatalf("default floor: %+v, GOGC %d (was %d)", f, gcPercent(), prev)
	}
	if g := heapGoal(); g < DefaultGCHeapFloor*9/10 || g > 2*DefaultGCHeapFloor {
		t.Fatalf("heap goal %d MiB with the floor, want about %d", g>>20, DefaultGCHeapFloor>>20)
	}
	gcsOn := garbage(256 << 20)
	t.Logf("collections for 256 MiB of garbage: %d without the floor, %d with it (GOGC %d)", gcsOff, gcsOn, f.GOGC)
	// Without the floor the goal is what the test binary's live heap makes
	// it (4 MiB at least, more with earlier tests' leftovers): the floor
	// must at least halve the collections while it is 4 or more times
	// that goal's distance, and cut them whenever it is above it. On a
	// busy machine a cycle's marking may not get a core while the loop
	// allocates on, so cycles stretch and fewer run than the goal makes:
	// then the counts measure the scheduler, not the goal, and only the
	// heap goals checked above are the floor's effect (a CI run counted
	// 7 cycles where a 4 MiB goal makes about 64).
	if expected := uint64(256<<20) / max(goalOff, 1); uint64(gcsOff)*4 < expected {
		t.Logf("%d collections without the floor where its %d MiB goal makes about %d: the machine is too busy to count them; the heap goals were checked", gcsOff, goalOff>>20, expected)
		gcsOn, gcsOff = 0, 0
	}
	switch {
	case gcsOff == 0:
	case goalOff*4 <= DefaultGCHeapFloor && gcsOn*2 > gcsOff:
		t.Fatalf("%d collections with the floor, %d without (goal %d MiB): want half or fewer", gcsOn, gcsOff, goalOff>>20)
	case goalOff < DefaultGCHeapFloor && gcsOn >= gcsOff:
		t.Fatalf("%d collections with the floor, %d without (goal %d MiB): want fewer", gcsOn, gcsOff, goalOff>>20)
	}
	shutdown(t, on)
	if p := gcPercent(); p != prev {
		t.Fatalf("GOGC %d after the last system shut down, want %d", p, prev)
	}
	if f := on.GCHeapFloor(); f.Bytes != 0 {
		t.Fatalf("after shutdown: %+v", f)
	}
}

func TestGCHeapFloorLargestOfRunningSystems(t *testing.T) {
	withGCEnv(t, nil)
	prev := gcPercent()
	a, err := New(WithGCHeapFloor(16 << 20))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(WithGCHeapFloor(64 << 20))
	if err != nil {
		t.Fatal(err)
	}
	if f := a.GCHeapFloor(); f.Bytes != 64<<20 {
		t.Fatalf("two systems: %+v, want the larger floor", f)
	}
	shutdown(t, b)
	if f := a.GCHeapFloor(); f.Bytes != 16<<20 {
		t.Fatalf("one left: %+v, want its floor", f)
	}
	shutdown(t, a)
	if p := gcPercent(); p != prev {
		t.Fatalf("GOGC %d after both shut down, want %d", p, prev)
	}
	if _, err := New(WithGCHeapFloor(-1)); err == nil {
		t.Fatal("a negative floor was accepted")
	}
}

func TestGCHeapFloorYieldsToTheProgram(t *testing.T) {
	prev := gcPercent()
	for _, tc := range []struct {
		env    map[string]string
		reason string
	}{
		{map[string]string{"GOGC": "200"}, "GOGC set"},
		{map[string]string{"GOMEMLIMIT": "1GiB"}, "GOMEMLIMIT set"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			withGCEnv(t, tc.env)
			s := newSys(t)
			if f := s.GCHeapFloor(); f.Bytes != 0 || f.Reason != tc.reason || gcPercent() != prev {
				t.Fatalf("got %+v and GOGC %d, want reason %q and GOGC %d", f, gcPercent(), tc.reason, prev)
			}
		})
	}
	t.Run("memory limit", func(t *testing.T) {
		withGCEnv(t, nil)
		old := debug.SetMemoryLimit(1 << 40)
		defer debug.SetMemoryLimit(old)
		s := newSys(t)
		if f := s.GCHeapFloor(); f.Bytes != 0 || f.Reason != "memory limit set" || gcPercent() != prev {
			t.Fatalf("got %+v and GOGC %d", f, gcPercent())
		}
	})
	t.Run("SetGCPercent", func(t *testing.T) {
		withGCEnv(t, nil)
		s, err := New(WithGCHeapFloor(1 << 30))
		if err != nil {
			t.Fatal(err)
		}
		if f := s.GCHeapFloor(); f.GOGC == 0 {
			t.Fatalf("a 1 GiB floor set no GOGC: %+v", f)
		}
		debug.SetGCPercent(150) // the program's own
		defer debug.SetGCPercent(prev)
		deadline := time.Now().Add(10 * time.Second)
		for s.GCHeapFloor().Reason != "GC percent changed" {
			if time.Now().After(deadline) {
				t.Fatalf("the floor did not yield: %+v", s.GCHeapFloor())
			}
			runtime.GC() // the floor looks after each collection
			runtime.Gosched()
		}
		if p := gcPercent(); p != 150 {
			t.Fatalf("GOGC %d, want the program's 150", p)
		}
		shutdown(t, s)
		if p := gcPercent(); p != 150 {
			t.Fatalf("GOGC %d after shutdown, want the program's 150", p)
		}
	})
}

// A real GOGC in the environment of a real process wins.
func TestGCHeapFloorGOGCEnvironment(t *testing.T) {
	if os.Getenv("TROUPE_GCFLOOR_CHILD") == "1" {
		s := newSys(t)
		if f := s.GCHeapFloor(); f.Reason != "GOGC set" || gcPercent() != 150 {
			t.Fatalf("child: %+v, GOGC %d; want no floor and GOGC 150", f, gcPercent())
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGCHeapFloorGOGCEnvironment$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "TROUPE_GCFLOOR_CHILD=1", "GOGC=150")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// After each collection the floor looks at the live heap again: a live
// heap that reaches the goal by itself gets the program's GC percent
// back, and the floor returns once the heap is small again.
func TestGCHeapFloorFollowsTheLiveHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory changes the heap")
	}
	withGCEnv(t, nil)
	prev := gcPercent()
	s, err := New(WithGCHeapFloor(16 << 20))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, s)
	// until collects (the floor looks after each collection) until the
	// floor reports what want says, or fails after 10 s.
	until := func(what string, want func(GCHeapFloor) bool) {
		t.Helper()
		testutil.EventuallyNil(t, 10*time.Second, func() error {
			if want(s.GCHeapFloor()) {
				return nil
			}
			runtime.GC()
			return fmt.Errorf("%s: %+v, GOGC %d", what, s.GCHeapFloor(), gcPercent())
		})
	}
	until("small heap", func(f GCHeapFloor) bool { return f.GOGC > prev })
	live := make([][]byte, 24) // 24 MiB live: above half the floor
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	until("big live heap", func(f GCHeapFloor) bool { return f.Bytes == 16<<20 && f.GOGC == 0 })
	if p := gcPercent(); p != prev {
		t.Fatalf("GOGC %d with a live heap above the floor, want %d", p, prev)
	}
	runtime.KeepAlive(live)
	live = nil
	until("small again", func(f GCHeapFloor) bool { return f.GOGC > prev })
	if p := gcPercent(); p != s.GCHeapFloor().GOGC {
		t.Fatalf("GOGC %d, the floor says %d", p, s.GCHeapFloor().GOGC)
	}
}

// The program's own GC percent wins also while the floor has set none (a
// live heap above the floor): a system with a larger floor started later
// must not overwrite it, nor must the last shutdown.
func TestGCHeapFloorYieldsWhileItSetsNone(t *testing.T) {
	withGCEnv(t, nil)
	prev := gcPercent()
	a := newSys(t, WithGCHeapFloor(1)) // every live heap is above it
	if f := a.GCHeapFloor(); f.Bytes != 1 || f.GOGC != 0 || gcPercent() != prev {
		t.Fatalf("a 1-byte floor: %+v, GOGC %d (was %d)", f, gcPercent(), prev)
	}
	debug.SetGCPercent(150) // the program's own
	defer debug.SetGCPercent(prev)
	b := newSys(t, WithGCHeapFloor(1<<30)) // would raise the GC percent
	for deadline := time.Now().Add(10 * time.Second); b.GCHeapFloor().Reason != "GC percent changed"; {
		if time.Now().After(deadline) {
			t.Fatalf("the floor did not yield: %+v, GOGC %d", b.GCHeapFloor(), gcPercent())
		}
		runtime.GC() // the floor looks after each collection
		runtime.Gosched()
	}
	if p := gcPercent(); p != 150 {
		t.Fatalf("GOGC %d, want the program's 150", p)
	}
	shutdown(t, b)
	shutdown(t, a)
	if p := gcPercent(); p != 150 {
		t.Fatalf("GOGC %d after shutdown, want the program's 150", p)
	}
}

// Go's heap goal counts the stacks and globals the collector scans, times
// the GC percent: the floor's percent must count them too, or a program
// with many goroutines gets a goal far above the floor.
func TestGCHeapFloorCountsStacks(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory changes the heap")
	}
	withGCEnv(t, nil)
	const floor = 32 << 20
	prev := gcPercent()
	var ready, exited sync.WaitGroup
	stop := make(chan struct{})
	for range 128 { // 128 × 64 KiB: 8 MiB of stack to scan
		ready.Add(1)
		exited.Go(func() { deepStack(&ready, stop) })
	}
	ready.Wait()
	defer exited.Wait()
	defer close(stop)
	s := newSys(t, WithGCHeapFloor(floor))
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC() // the stacks scanned, then the floor looks
		runtime.Gosched()
		// The goal is the floor, or the program's own when that is
		// larger (a live heap too big for the floor), within the
		// floor's hysteresis of an eighth of its GC percent.
		m := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"},
			{Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
		metrics.Read(m)
		goal, live := m[0].Value.Uint64(), m[1].Value.Uint64()
		roots := m[2].Value.Uint64() + m[3].Value.Uint64()
		want := max(floor, live+(live+roots)*uint64(prev)/100)
		if goal >= want*8/10 && goal <= want*23/20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heap goal %d MiB, want about %d: floor %d MiB, live %d MiB, stacks and globals %d MiB (%+v)",
				goal>>20, want>>20, floor>>20, live>>20, roots>>20, s.GCHeapFloor())
		}
	}
}

// deepStack holds 64 KiB of stack until stop closes.
//
//go:noinline
func deepStack(ready *sync.WaitGroup, stop <-chan struct{}) byte {
	var pad [64 << 10]byte
	ready.Done()
	<-stop
	return pad[len(stop)]
}

// A floor whose GC percent would not fit the runtime's (an int32: a
// larger one wraps, and may come out negative, turning the GC off) is
// refused.
func TestGCHeapFloorRefusesAbsurdFloors(t *testing.T) {
	withGCEnv(t, nil)
	for _, b := range []int64{1 << 47, 1<<63 - 1} {
		if s, err := New(WithGCHeapFloor(b)); err == nil {
			shutdown(t, s)
			t.Errorf("a floor of %d bytes was accepted", b)
		}
	}
}
