package actor

import (
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

func TestReceiveReturnsAtOnceAndNeverRunsHandler(t *testing.T) {
	s := newSys(t)
	events := make(chan string, 4)
	ref := mustSpawn(t, s, "r", func(c *Context) {
		c.Send(c.Self(), "m") // already in the mailbox when Receive runs
		c.Receive(On(func(string) { events <- "handler" }))
		events <- "after receive"
	})
	_ = ref
	if got := recv(t, events); got != "after receive" {
		t.Fatalf("first event %q: code after Receive must run before any handler", got)
	}
	if got := recv(t, events); got != "handler" {
		t.Fatalf("second event %q", got)
	}
}

func TestTrampolineDoesNotGrowStack(t *testing.T) {
	s := newSys(t)
	const n = 1_000_000
	depths := make(chan [2]int, 1)
	var first int
	var loop func(c *Context, i int)
	loop = func(c *Context, i int) {
		c.Receive(On(func(int) {
			pcs := make([]uintptr, 256)
			d := runtime.Callers(0, pcs)
			if i == 0 {
				first = d
			}
			if i == n-1 {
				depths <- [2]int{first, d}
				return // stop
			}
			c.Send(c.Self(), i+1)
			loop(c, i+1)
		}))
	}
	ref := mustSpawn(t, s, "", func(c *Context) { loop(c, 0) })
	s.Send(ref, 0)
	select {
	case d := <-depths:
		if d[0] != d[1] {
			t.Fatalf("stack depth %d at the first message, %d at the millionth", d[0], d[1])
		}
	case <-time.After(60 * time.Second):
		t.Fatal("timed out")
	}
}

func TestSelectiveReceiveKeepsOrderOfNonMatching(t *testing.T) {
	s := newSys(t)
	got := make(chan []any, 1)
	ref := mustSpawn(t, s, "", func(c *Context) {
		// Wait for the int first; the strings wait in the mailbox, in order.
		c.Receive(On(func(n int) {
			var seen []any
			var rest func()
			rest = func() {
				c.Receive(Any(func(m any) {
					seen = append(seen, m)
					if len(seen) == 4 {
						got <- seen
						return
					}
					rest()
				}))
			}
			seen = append(seen, n)
			rest()
		}))
	})
	for _, m := range []any{"a", "b", "c", 42} {
		s.Send(ref, m)
	}
	seen := recv(t, got)
	want := []any{42, "a", "b", "c"}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("got %v, want %v", seen, want)
		}
	}
}

func TestNestedReceiveTestsOnlyNestedContinuation(t *testing.T) {
	s := newSys(t)
	out := make(chan string, 8)
	type lock struct{}
	type unlock struct{}
	var top func(c *Context)
	top = func(c *Context) {
		c.Receive(
			On(func(m string) { out <- "outer:" + m; top(c) }),
			On(func(lock) {
				out <- "locked"
				c.Receive(On(func(unlock) { out <- "unlocked"; top(c) }))
			}),
		)
	}
	ref := mustSpawn(t, s, "", top)
	s.Send(ref, lock{})
	s.Send(ref, "x") // arrives during the nested receive: must wait
	s.Send(ref, unlock{})
	for _, want := range []string{"locked", "unlocked", "outer:x"} {
		if got := recv(t, out); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestNewMessageIsNotRescannedAgainstOldOnes(t *testing.T) {
	s := newSys(t)
	var guardCalls atomic.Int32
	done := make(chan int32, 1)
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(
			OnWhen(func(n int) bool { guardCalls.Add(1); return n < 0 }, func(int) {}),
			On(func(string) { done <- guardCalls.Load() }),
		)
	})
	s.Send(ref, 1) // guard tested once, saved
	s.Send(ref, 2) // guard tested once (not message 1 again), saved
	s.Send(ref, "stop")
	if n := recv(t, done); n != 2 {
		t.Fatalf("guard called %d times for two saved messages, want 2", n)
	}
}

func TestReceiveWithinFiresOnceAndNeverAfterMatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(WithLogger(testutil.QuietLogger()), WithLoops(1))
		if err != nil {
			t.Fatal(err)
		}
		var timeouts, matches atomic.Int32
		ref := mustSpawn(t, s, "", func(c *Context) {
			c.ReceiveWithin(100*time.Millisecond,
				On(func(int) { matches.Add(1); c.Receive(On(func(string) {})) }),
				Timeout(func() {
					timeouts.Add(1)
					c.ReceiveWithin(100*time.Millisecond,
						On(func(int) {
							matches.Add(1)
							c.Receive(On(func(string) {}))
						}),
						Timeout(func() { timeouts.Add(1) }))
				}))
		})
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		if timeouts.Load() != 1 {
			t.Fatalf("timeouts after 150ms = %d, want 1", timeouts.Load())
		}
		s.Send(ref, 7) // matches the second ReceiveWithin before its deadline
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if timeouts.Load() != 1 || matches.Load() != 1 {
			t.Fatalf("timeouts=%d matches=%d, want 1 and 1", timeouts.Load(), matches.Load())
		}
		if err := s.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReceiveWithinPrefersSavedMatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(WithLogger(testutil.QuietLogger()), WithLoops(1))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 2)
		ref := mustSpawn(t, s, "", func(c *Context) {
			c.Receive(On(func(string) {
				// The int is already saved: it wins, even with a zero timeout.
				c.ReceiveWithin(0, On(func(int) { got <- "int" }), Timeout(func() { got <- "timeout" }))
			}))
		})
		s.Send(ref, 1)
		s.Send(ref, "go")
		synctest.Wait()
		if g := <-got; g != "int" {
			t.Fatalf("got %s", g)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("timeout fired after a match")
		}
		if err := s.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestBadReceivesStopTheActorWithClearReason(t *testing.T) {
	s := newSys(t)
	cases := map[string]Behavior{
		"no cases":          func(c *Context) { c.Receive() },
		"nil case":          func(c *Context) { c.Receive(On[int](nil)) },
		"negative timeout":  func(c *Context) { c.ReceiveWithin(-time.Second, Timeout(func() {})) },
		"within no timeout": func(c *Context) { c.ReceiveWithin(time.Second, Any(func(any) {})) },
		"timeout no within": func(c *Context) { c.Receive(Timeout(func() {})) },
		"twice":             func(c *Context) { c.Receive(Any(func(any) {})); c.Receive(Any(func(any) {})) },
		"ask no timeout":    func(c *Context) { c.Ask(c.Self(), 1, 0, func(any, error) {}) },
		"loop beside":       func(c *Context) { c.Receive(Loop(Any(func(any) {})), On(func(string) {})) },
		"loop within":       func(c *Context) { c.ReceiveWithin(time.Second, Loop(Any(func(any) {})), Timeout(func() {})) },
		"loop timeout":      func(c *Context) { c.Receive(Loop(Any(func(any) {}), Timeout(func() {}))) },
		"empty loop":        func(c *Context) { c.Receive(Loop()) },
		"nil in loop":       func(c *Context) { c.Receive(Loop(On[int](nil))) },
		"empty cases":       func(c *Context) { c.Receive(Cases()) },
		"nil in cases":      func(c *Context) { c.Receive(Cases(Any(func(any) {}), On[int](nil))) },
		"loop in cases":     func(c *Context) { c.Receive(Cases(Loop(Any(func(any) {})))) },
		"cases timeout":     func(c *Context) { c.Receive(Cases(Any(func(any) {}), Timeout(func() {}))) },
		"cases no timeout":  func(c *Context) { c.ReceiveWithin(time.Second, Cases(Any(func(any) {}))) },
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			ref := mustSpawn(t, s, "", func(c *Context) {
				c.Receive(On(func(struct{}) { b(c) }))
			})
			downs := watcher(t, s, ref)
			s.Send(ref, struct{}{})
			d := recv(t, downs)
			if !errors.Is(d.Reason, ErrBadReceive) {
				t.Fatalf("reason %v, want ErrBadReceive", d.Reason)
			}
		})
	}
}

func TestBehaviorWithoutReceiveStopsNormally(t *testing.T) {
	s := newSys(t)
	ran := make(chan struct{})
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(On(func(struct{}) { close(ran) })) // then returns without Receive
	})
	downs := watcher(t, s, ref)
	s.Send(ref, struct{}{})
	<-ran
	if d := recv(t, downs); d.Reason != nil || d.Ref != ref {
		t.Fatalf("down %+v, want normal exit of %v", d, ref)
	}
}

func TestPerSenderOrder(t *testing.T) {
	s := newSys(t)
	const senders, per = 8, 20_000
	type msg struct{ from, seq int }
	done := make(chan error, 1)
	ref := mustSpawn(t, s, "sink", func(c *Context) {
		last := make([]int, senders)
		for i := range last {
			last[i] = -1
		}
		total := 0
		forever(c, func() []Case {
			return []Case{On(func(m msg) {
				if m.seq != last[m.from]+1 {
					done <- errors.New("out of order")
				}
				last[m.from] = m.seq
				if total++; total == senders*per {
					done <- nil
				}
			})}
		})
	})
	for i := range senders {
		mustSpawn(t, s, "", func(c *Context) {
			for j := range per {
				c.Send(ref, msg{i, j})
			}
		})
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestThroughputKeepsChattyActorFromStarving(t *testing.T) {
	s := newSys(t, WithLoops(1), WithThroughput(8))
	stop := make(chan struct{})
	var chatty func(c *Context)
	chatty = func(c *Context) {
		c.Receive(On(func(int) {
			select {
			case <-stop:
				return
			default:
			}
			c.Send(c.Self(), 0)
			chatty(c)
		}))
	}
	ref := mustSpawn(t, s, "", chatty)
	s.Send(ref, 0)
	s.Send(ref, 0)
	reached := make(chan struct{})
	mustSpawn(t, s, "", func(c *Context) { close(reached) })
	recv(t, reached)
	close(stop)
}

// An actor that installs fresh cases per message, as in the paper, keeps
// one multiCase: Receive refills it, and lets go of the cases it drops.
func TestFreshCasesRefillTheActorsMultiCase(t *testing.T) {
	s := newSys(t)
	type get struct{}
	out := make(chan string, 1)
	var first *multiCase
	var counter func(c *Context, v int)
	counter = func(c *Context, v int) {
		m, _ := c.cont.(*multiCase)
		if first == nil {
			first = m
		} else if m != first {
			out <- "a new multiCase"
			return
		}
		if v == 3 { // one case fewer: the dropped slot is cleared
			c.Receive(On(func(int) { counter(c, v+1) }), On(func(get) {}))
			if tail := first.cases[:3]; tail[2] != nil {
				out <- "a dropped case kept"
			}
			return
		}
		c.Receive(
			On(func(int) { counter(c, v+1) }),
			On(func(get) { out <- "got " + strconv.Itoa(v) }),
			On(func(string) {}),
		)
	}
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(On(func(int) { counter(c, 1) }), On(func(bool) {}))
	})
	for range 5 {
		s.Send(ref, 0)
	}
	s.Send(ref, get{})
	if got := recv(t, out); got != "got 5" {
		t.Fatal(got)
	}
}
