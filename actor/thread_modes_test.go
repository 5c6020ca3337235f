package actor

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// The semantics tests below run in both modes: an event actor (a
// *Context, on a loop) and a thread-style actor (a *Thread, on its own
// goroutine). Their behaviors are written once, in continuation style
// (Receive the last statement of its step), which both modes run alike:
// the event actor returns to its loop, the thread blocks in Receive.

// api is what the tests use of an actor, in either mode.
type api interface {
	Self() Ref
	Sender() Ref
	Send(to Ref, msg any)
	Reply(msg any)
	Receive(cases ...Case)
	ReceiveWithin(d time.Duration, cases ...Case)
	Link(ref Ref)
	Monitor(ref Ref) MonitorID
	TrapExit(on bool)
	Exit(reason error)
}

var (
	_ api = (*Context)(nil)
	_ api = (*Thread)(nil)
)

type mode struct {
	name  string
	spawn func(s *System, name string, b func(a api), opts ...SpawnOption) (Ref, error)
	child func(name string, b func(a api)) ChildSpec
}

var modes = []mode{
	{
		name: "event",
		spawn: func(s *System, name string, b func(a api), opts ...SpawnOption) (Ref, error) {
			return s.Spawn(name, func(c *Context) { b(c) }, opts...)
		},
		child: func(name string, b func(a api)) ChildSpec {
			return ChildSpec{Name: name, Start: func(c *Context) { b(c) }}
		},
	},
	{
		name: "thread",
		spawn: func(s *System, name string, b func(a api), opts ...SpawnOption) (Ref, error) {
			return s.SpawnThread(name, func(t *Thread) { b(t) }, opts...)
		},
		child: func(name string, b func(a api)) ChildSpec {
			return ChildSpec{Name: name, Thread: func(t *Thread) { b(t) }}
		},
	},
}

func forModes(t *testing.T, f func(t *testing.T, m mode)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { f(t, m) })
	}
}

func (m mode) must(t testing.TB, s *System, name string, b func(a api), opts ...SpawnOption) Ref {
	t.Helper()
	ref, err := m.spawn(s, name, b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// loopOn installs cases after each message, for ever: in continuation
// style for an event actor, with for in a thread (whose stack then stays
// flat), until the actor stops.
func loopOn(a api, cases func() []Case) {
	if t, ok := a.(*Thread); ok {
		for {
			t.Receive(cases()...) // does not return once the actor stops
		}
	}
	var again func()
	again = func() {
		cs := cases()
		for i, k := range cs {
			cs[i] = wrap(k, again)
		}
		a.Receive(cs...)
	}
	again()
}

func TestModesPerSenderOrder(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		const senders, per = 4, 2_000
		type msg struct{ from, seq int }
		done := make(chan error, 1)
		ref := m.must(t, s, "sink", func(a api) {
			last := make([]int, senders)
			for i := range last {
				last[i] = -1
			}
			total := 0
			loopOn(a, func() []Case {
				return []Case{On(func(x msg) {
					if x.seq != last[x.from]+1 {
						done <- errors.New("out of order")
						a.Exit(errors.New("out of order"))
						return
					}
					last[x.from] = x.seq
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
	})
}

func TestModesSelectiveReceiveKeepsOrder(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		got := make(chan []any, 1)
		ref := m.must(t, s, "", func(a api) {
			var seen []any
			var rest func()
			rest = func() {
				a.Receive(Any(func(x any) {
					if seen = append(seen, x); len(seen) == 5 {
						got <- seen
						return
					}
					rest()
				}))
			}
			a.Receive(On(func(n int) { seen = append(seen, n); rest() }))
		})
		for _, x := range []any{"a", "b", "c", 42, "d"} {
			s.Send(ref, x)
		}
		seen := recv(t, got)
		want := []any{42, "a", "b", "c", "d"}
		for i := range want {
			if seen[i] != want[i] {
				t.Fatalf("got %v, want %v", seen, want)
			}
		}
	})
}

func TestModesNestedReceive(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		out := make(chan string, 8)
		type lock struct{}
		type unlock struct{}
		ref := m.must(t, s, "", func(a api) {
			var open func()
			open = func() {
				a.Receive(
					On(func(x string) { out <- "outer:" + x; open() }),
					On(func(lock) {
						out <- "locked"
						a.Receive(On(func(unlock) { out <- "unlocked"; open() }))
					}),
				)
			}
			open()
		})
		s.Send(ref, lock{})
		s.Send(ref, "x") // arrives during the nested receive: must wait
		s.Send(ref, unlock{})
		s.Send(ref, "y")
		for _, want := range []string{"locked", "unlocked", "outer:x", "outer:y"} {
			if got := recv(t, out); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	})
}

func TestModesGuardsRunOncePerNewMessage(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		var guardCalls atomic.Int32
		done := make(chan int32, 1)
		ref := m.must(t, s, "", func(a api) {
			a.Receive(
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
	})
}

func TestModesReceiveWithin(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(WithLogger(testutil.QuietLogger()), WithLoops(1))
			if err != nil {
				t.Fatal(err)
			}
			var timeouts, matches atomic.Int32
			ref := m.must(t, s, "", func(a api) {
				var waiting func()
				waiting = func() {
					a.ReceiveWithin(100*time.Millisecond,
						On(func(int) { matches.Add(1); a.Receive(On(func(string) {})) }),
						Timeout(func() { timeouts.Add(1); waiting() }),
					)
				}
				waiting()
			})
			time.Sleep(250 * time.Millisecond) // two timeouts: at 100 and 200 ms
			synctest.Wait()
			if n := timeouts.Load(); n != 2 {
				t.Fatalf("timeouts after 250ms = %d, want 2", n)
			}
			s.Send(ref, 7) // matches before the third deadline
			synctest.Wait()
			time.Sleep(time.Second)
			synctest.Wait()
			if timeouts.Load() != 2 || matches.Load() != 1 {
				t.Fatalf("timeouts=%d matches=%d, want 2 and 1", timeouts.Load(), matches.Load())
			}
			if err := s.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestModesReceiveWithinPrefersSavedMatch(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(WithLogger(testutil.QuietLogger()), WithLoops(1))
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 2)
			ref := m.must(t, s, "", func(a api) {
				a.Receive(On(func(string) {
					// The int is already saved: it wins, even with a zero timeout.
					a.ReceiveWithin(0, On(func(int) { got <- "int" }), Timeout(func() { got <- "timeout" }))
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
	})
}

func TestModesReplyToSystemAsk(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		ref := m.must(t, s, "echo", func(a api) {
			loopOn(a, func() []Case {
				return []Case{On(func(n int) { a.Reply(n * 2) })}
			})
		})
		for i := range 3 {
			v, err := s.Ask(t.Context(), ref, i)
			if err != nil || v != i*2 {
				t.Fatalf("ask %d: %v, %v", i, v, err)
			}
		}
	})
}
