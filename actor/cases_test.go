package actor

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// An idiom is a way to write an actor's states. state returns the function
// that installs one state's cases (build makes them): paper builds them
// afresh at every install, as the paper does; cases builds them once, with
// Cases, and installs that value every time.
type idiom struct {
	name   string
	state  func(c *Context, build func() []Case) func()
	within func(c *Context, d time.Duration, build func() []Case) func()
}

var idioms = []idiom{
	{
		name:  "paper",
		state: func(c *Context, build func() []Case) func() { return func() { c.Receive(build()...) } },
		within: func(c *Context, d time.Duration, build func() []Case) func() {
			return func() { c.ReceiveWithin(d, build()...) }
		},
	},
	{
		name: "cases",
		state: func(c *Context, build func() []Case) func() {
			var set Case // built at the first install: build may name other states
			return func() {
				if set == nil {
					set = Cases(build()...)
				}
				c.Receive(set)
			}
		},
		within: func(c *Context, d time.Duration, build func() []Case) func() {
			var set Case
			return func() {
				if set == nil {
					set = Cases(build()...)
				}
				c.ReceiveWithin(d, set)
			}
		},
	},
}

func forIdioms(t *testing.T, f func(t *testing.T, id idiom)) {
	for _, id := range idioms {
		t.Run(id.name, func(t *testing.T) { f(t, id) })
	}
}

func TestIdiomsNestedReceive(t *testing.T) {
	forIdioms(t, func(t *testing.T, id idiom) {
		s := newSys(t)
		out := make(chan string, 8)
		type lock struct{}
		type unlock struct{}
		ref := mustSpawn(t, s, "", func(c *Context) {
			var open, locked func()
			open = id.state(c, func() []Case {
				return []Case{
					On(func(m string) { out <- "outer:" + m; open() }),
					On(func(lock) { out <- "locked"; locked() }),
				}
			})
			locked = id.state(c, func() []Case {
				return []Case{On(func(unlock) { out <- "unlocked"; open() })}
			})
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

func TestIdiomsSelectiveReceiveKeepsOrder(t *testing.T) {
	forIdioms(t, func(t *testing.T, id idiom) {
		s := newSys(t)
		got := make(chan []any, 1)
		ref := mustSpawn(t, s, "", func(c *Context) {
			var seen []any
			var first, rest func()
			first = id.state(c, func() []Case {
				return []Case{On(func(n int) { seen = append(seen, n); rest() })}
			})
			rest = id.state(c, func() []Case {
				return []Case{Any(func(m any) {
					if seen = append(seen, m); len(seen) == 5 {
						got <- seen
						return
					}
					rest()
				})}
			})
			first()
		})
		for _, m := range []any{"a", "b", "c", 42, "d"} {
			s.Send(ref, m)
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

func TestIdiomsGuardsRunOncePerNewMessage(t *testing.T) {
	forIdioms(t, func(t *testing.T, id idiom) {
		s := newSys(t)
		var guardCalls atomic.Int32
		done := make(chan []int, 1)
		ref := mustSpawn(t, s, "", func(c *Context) {
			var got []int
			var wait func()
			wait = id.state(c, func() []Case {
				return []Case{
					OnWhen(func(n int) bool { guardCalls.Add(1); return n < 0 }, func(n int) { got = append(got, n); wait() }),
					On(func(string) { done <- got }),
				}
			})
			wait()
		})
		s.Send(ref, 1)  // guard tested once, saved
		s.Send(ref, 2)  // guard tested once (not message 1 again), saved
		s.Send(ref, -3) // accepted
		s.Send(ref, "stop")
		got := recv(t, done)
		if len(got) != 1 || got[0] != -3 {
			t.Fatalf("guarded case got %v, want [-3]", got)
		}
		// Each int once when it arrived, then 1 and 2 once more when the
		// handler of -3 installed the continuation again.
		if n := guardCalls.Load(); n != 5 {
			t.Fatalf("guard called %d times, want 5", n)
		}
	})
}

func TestIdiomsReceiveWithin(t *testing.T) {
	forIdioms(t, func(t *testing.T, id idiom) {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(WithLogger(testutil.QuietLogger()), WithLoops(1))
			if err != nil {
				t.Fatal(err)
			}
			var timeouts, matches atomic.Int32
			ref := mustSpawn(t, s, "", func(c *Context) {
				var waiting, done func()
				waiting = id.within(c, 100*time.Millisecond, func() []Case {
					return []Case{
						On(func(int) { matches.Add(1); done() }),
						Timeout(func() { timeouts.Add(1); waiting() }),
					}
				})
				done = id.state(c, func() []Case { return []Case{On(func(string) {})} })
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

func TestIdiomsPerSenderOrder(t *testing.T) {
	forIdioms(t, func(t *testing.T, id idiom) {
		s := newSys(t)
		const senders, per = 4, 5_000
		type msg struct{ from, seq int }
		done := make(chan error, 1)
		ref := mustSpawn(t, s, "sink", func(c *Context) {
			last := make([]int, senders)
			for i := range last {
				last[i] = -1
			}
			total := 0
			var sink func()
			sink = id.state(c, func() []Case {
				return []Case{On(func(m msg) {
					if m.seq != last[m.from]+1 {
						done <- errors.New("out of order")
						return
					}
					last[m.from] = m.seq
					if total++; total == senders*per {
						done <- nil
						return
					}
					sink()
				})}
			})
			sink()
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

func TestCasesFlattenAndKeepTheirOrder(t *testing.T) {
	s := newSys(t)
	got := make(chan string, 4)
	inner := Cases(On(func(int) { got <- "inner int" }), On(func(string) { got <- "inner string" }))
	ref := mustSpawn(t, s, "", func(c *Context) {
		var set Case
		set = Cases(On(func(string) { got <- "first string"; c.Receive(set) }), inner)
		c.Receive(set)
	})
	s.Send(ref, "a")
	s.Send(ref, 1)
	for _, want := range []string{"first string", "inner int"} {
		if g := recv(t, got); g != want {
			t.Fatalf("got %q, want %q", g, want)
		}
	}
	if m := inner.(*multiCase); len(m.cases) != 2 {
		t.Fatalf("inner set changed: %d cases", len(m.cases))
	}
	if m := Cases(inner, inner).(*multiCase); len(m.cases) != 4 {
		t.Fatalf("Cases(inner, inner) has %d cases, want 4 (flattened)", len(m.cases))
	}
}

// A Cases set installed beside other cases, in a Receive of several, is
// the user's value: the actor's next Receive of several cases must not
// refill it in place.
func TestCasesSetIsNeverRefilled(t *testing.T) {
	s := newSys(t)
	got := make(chan string, 4)
	ref := mustSpawn(t, s, "", func(c *Context) {
		var set Case
		set = Cases(On(func(string) { got <- "set"; c.Receive(set) }), On(func(int) {
			got <- "int"
			c.Receive(On(func(bool) { got <- "bool"; c.Receive(set) }), On(func(float64) {}))
		}))
		c.Receive(set)
	})
	for _, m := range []any{"a", 1, true, "b"} {
		s.Send(ref, m)
	}
	for _, want := range []string{"set", "int", "bool", "set"} {
		if g := recv(t, got); g != want {
			t.Fatalf("got %q, want %q", g, want)
		}
	}
}

// A set is immutable once built: many actors on several loops may install
// the same one at once, alone, inside another set, or beside other cases
// in a Receive of several (whose multiCase the actor refills in place),
// and go from it to a Receive of several.
func TestCasesSharedByManyActors(t *testing.T) {
	s := newSys(t)
	type job struct {
		n     int
		reply chan<- int
	}
	type then struct{ f func() } // what an actor does next, from a handler it shares
	shared := Cases(
		On(func(j job) { j.reply <- 2 * j.n }), // stops the actor: installs nothing
		On(func(m then) { m.f() }),
	)
	const actors = 64
	refs := make([]Ref, actors)
	for i := range refs {
		refs[i] = mustSpawn(t, s, "", func(c *Context) {
			next := func() { c.Receive(shared, On(func(int) {})) }
			if i%2 == 1 {
				next = func() { c.Receive(Cases(shared, On(func(int) {})), On(func(bool) {})) }
			}
			c.Send(c.Self(), then{func() {
				c.Receive(shared, On(func(string) { next() }))
			}})
			c.Receive(shared)
		})
	}
	reply := make(chan int, actors)
	var senders sync.WaitGroup
	for i, ref := range refs {
		senders.Go(func() { s.Send(ref, "go on"); s.Send(ref, job{i, reply}) })
	}
	senders.Wait()
	sum := 0
	for range actors {
		sum += recv(t, reply)
	}
	if want := actors * (actors - 1); sum != want {
		t.Fatalf("replies sum to %d, want %d", sum, want)
	}
	if m := shared.(*multiCase); len(m.cases) != 2 || m.owned || m.loop {
		t.Fatalf("the shared set changed: %+v", m)
	}
}
