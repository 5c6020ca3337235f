package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// The paper's counter messages.
type (
	incr   struct{}
	value  struct{ to actor.Ref }
	lock   struct{ to actor.Ref }
	unlock struct{ v int }
)

// counter is the paper's counter, each of its states a set of cases built
// once: a handler installs the next state, and no message allocates.
type counter struct {
	v                int
	counting, locked actor.Case
}

func newCounter(c *actor.Context) {
	k := &counter{}
	k.counting = actor.Cases(
		actor.On(func(incr) { k.v++; c.Receive(k.counting) }),
		actor.On(func(m value) { c.Send(m.to, k.v); c.Receive(k.counting) }),
		actor.On(func(m lock) { c.Send(m.to, k.v); c.Receive(k.locked) }), // nested wait
	)
	k.locked = actor.Cases(
		actor.On(func(u unlock) { k.v = u.v; c.Receive(k.counting) }),
	)
	c.Receive(k.counting)
}

// Cmd is 'troupe demo': it runs the counter and the ring on an actor
// system of its own and returns the exit code.
func Cmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("demo", "", "run the paper's counter and a ring of actors locally, and print what happened", stderr)
	ringSize := fs.Int("ring", 100_000, "number of actors in the ring")
	laps := fs.Int("laps", 10, "times the token goes around the ring")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	if *ringSize < 2 || *laps < 1 || *timeout <= 0 {
		fmt.Fprintln(stderr, "troupe demo: -ring must be at least 2, -laps at least 1 and -timeout positive")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	sys, err := actor.New(actor.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		fmt.Fprintln(stderr, "troupe demo:", err)
		return 1
	}
	err = errors.Join(runCounter(ctx, sys, stdout), runRing(ctx, sys, stdout, *ringSize, *laps))
	shutCtx, cancelShut := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelShut()
	err = errors.Join(err, sys.Shutdown(shutCtx))
	if err != nil {
		fmt.Fprintln(stderr, "troupe demo:", err)
		return 1
	}
	return 0
}

// runCounter plays the paper's Lock/Unlock scenario and prints each event.
func runCounter(ctx context.Context, sys *actor.System, out io.Writer) error {
	fmt.Fprintln(out, "== counter (Haller & Odersky): selective receive with a nested Lock/Unlock")
	ctr, err := sys.Spawn("counter", newCounter)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	_, err = sys.Spawn("client", func(c *actor.Context) {
		c.Send(ctr, incr{})
		c.Send(ctr, incr{})
		fmt.Fprintln(out, "client: sent incr, incr, lock")
		c.Send(ctr, lock{to: c.Self()})
		c.Receive(actor.On(func(v int) {
			fmt.Fprintf(out, "client: counter locked at %d; sending incr (must wait), unlock(%d), value\n", v, v*10)
			c.Send(ctr, incr{})
			c.Send(ctr, unlock{v: v * 10})
			c.Send(ctr, value{to: c.Self()})
			c.Receive(actor.On(func(v int) {
				fmt.Fprintf(out, "client: counter value %d (unlock set %d, then the waiting incr ran)\n", v, v-1)
				close(done)
			}))
		}))
	})
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("counter: %w", ctx.Err())
	}
}

type token struct{ hops int }

// runRing spawns n actors in a ring and sends a token around it.
func runRing(ctx context.Context, sys *actor.System, out io.Writer, n, laps int) error {
	fmt.Fprintf(out, "== ring of %d actors, token passed %d times around\n", n, laps)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	goroutines := runtime.NumGoroutine()
	refs := make([]actor.Ref, n)
	next := make([]actor.Ref, n)
	done := make(chan struct{})
	var started atomic.Int64
	allStarted := make(chan struct{})
	t0 := time.Now()
	for i := range n {
		ref, err := sys.Spawn("ring-"+strconv.Itoa(i), func(c *actor.Context) {
			if started.Add(1) == int64(n) {
				close(allStarted)
			}
			var passing actor.Case
			passing = actor.Cases(actor.On(func(t token) {
				if t.hops == 0 {
					close(done)
					return
				}
				c.Send(next[i], token{t.hops - 1})
				c.Receive(passing)
			}))
			c.Receive(passing)
		})
		if err != nil {
			return err
		}
		refs[i] = ref
	}
	for i := range n {
		next[i] = refs[(i+1)%n]
	}
	select {
	case <-allStarted:
	case <-ctx.Done():
		return fmt.Errorf("ring: spawning: %w", ctx.Err())
	}
	spawn := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	fmt.Fprintf(out, "spawned %d actors in %v (%.0f actors/s); %d goroutines before, %d now; ~%d bytes per idle actor\n",
		n, spawn.Round(time.Millisecond), float64(n)/spawn.Seconds(), goroutines, runtime.NumGoroutine(),
		(int64(m1.HeapInuse+m1.StackInuse)-int64(m0.HeapInuse+m0.StackInuse))/int64(n))
	hops := n * laps
	t1 := time.Now()
	sys.Send(refs[0], token{hops})
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("ring: passing the token: %w", ctx.Err())
	}
	el := time.Since(t1)
	fmt.Fprintf(out, "%d hops in %v: %.0f ns/hop\n", hops, el.Round(time.Millisecond), float64(el.Nanoseconds())/float64(hops))
	return nil
}
