package actor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

type Incr struct{}
type Value struct{ To actor.Ref }
type Lock struct{ To actor.Ref }
type Unlock struct{ V int }

// counter is the paper's counter with its states as values: each is a
// set of cases built once, and a handler installs the next one. Lock waits
// for Unlock in a nested receive without inverting control, and no
// message costs an allocation.
type counter struct {
	v                int
	counting, locked actor.Case
}

func newCounter(c *actor.Context) {
	k := &counter{}
	k.counting = actor.Cases(
		actor.On(func(Incr) { k.v++; c.Receive(k.counting) }),
		actor.On(func(m Value) { c.Send(m.To, k.v); c.Receive(k.counting) }),
		actor.On(func(m Lock) { c.Send(m.To, k.v); c.Receive(k.locked) }), // nested wait
	)
	k.locked = actor.Cases(
		actor.On(func(u Unlock) { k.v = u.V; c.Receive(k.counting) }),
	)
	c.Receive(k.counting)
}

// paperCounter is the same counter in the paper's literal style: state in
// the argument, a fresh closure per case per message (which allocates).
func paperCounter(c *actor.Context, v int) {
	c.Receive(
		actor.On(func(Incr) { paperCounter(c, v+1) }),
		actor.On(func(m Value) { c.Send(m.To, v); paperCounter(c, v) }),
		actor.On(func(m Lock) {
			c.Send(m.To, v)
			c.Receive(actor.On(func(u Unlock) { paperCounter(c, u.V) }))
		}),
	)
}

// The counter of Haller & Odersky with Lock/Unlock: while locked, the
// counter only accepts Unlock; the Incr sent meanwhile waits in the mailbox
// and is handled, in order, after the Unlock.
func Example_counter() {
	fmt.Println(runCounter(newCounter))
	// Output: locked at 2, value 21
}

// The same counter in the paper's literal style behaves the same.
func Example_counterPaperStyle() {
	fmt.Println(runCounter(func(c *actor.Context) { paperCounter(c, 0) }))
	// Output: locked at 2, value 21
}

// runCounter spawns a counter and a client that locks it.
func runCounter(b actor.Behavior) string {
	sys, err := actor.New()
	if err != nil {
		panic(err)
	}
	ctr, _ := sys.Spawn("counter", b)
	out := make(chan string, 1)
	sys.Spawn("client", func(c *actor.Context) {
		c.Send(ctr, Incr{})
		c.Send(ctr, Incr{})
		c.Send(ctr, Lock{To: c.Self()})
		c.Receive(actor.On(func(locked int) {
			c.Send(ctr, Incr{}) // kept until the counter is unlocked
			c.Send(ctr, Unlock{V: locked * 10})
			c.Send(ctr, Value{To: c.Self()})
			c.Receive(actor.On(func(v int) {
				out <- fmt.Sprintf("locked at %d, value %d", locked, v)
			}))
		}))
	})
	res := <-out
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		return err.Error()
	}
	return res
}

// Cases makes a state of an actor once; a handler gets what it needs of
// the message from its argument and the Context (here Reply), and
// installs the next state, here the same one.
func ExampleCases() {
	sys, _ := actor.New()
	defer sys.Shutdown(context.Background())
	echo, _ := sys.Spawn("echo", func(c *actor.Context) {
		var serving actor.Case
		serving = actor.Cases(
			actor.On(func(s string) { c.Reply("echo: " + s); c.Receive(serving) }),
			actor.On(func(n int) { c.Reply(n); c.Receive(serving) }),
		)
		c.Receive(serving)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := sys.Ask(ctx, echo, "hello")
	fmt.Println(reply, err)
	n, err := actor.AskAs[int](ctx, sys, echo, 7)
	fmt.Println(n, err)
	// Output:
	// echo: hello <nil>
	// 7 <nil>
}

// System.Ask waits for a reply from plain Go code; the actor answers with
// Reply.
func ExampleSystem_Ask() {
	sys, _ := actor.New()
	defer sys.Shutdown(context.Background())
	echo, _ := sys.Spawn("echo", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.On(func(s string) { c.Reply("echo: " + s) })))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := sys.Ask(ctx, echo, "hello")
	fmt.Println(reply, err)
	// Output: echo: hello <nil>
}

type Add struct{ N int }
type Total struct{}

// Loop keeps its cases installed, and AskAs asks for a reply of a known
// type: a running total without the re-install idiom or type assertions.
func ExampleLoop() {
	sys, err := actor.New()
	if err != nil {
		panic(err)
	}
	defer sys.Shutdown(context.Background())
	sum, _ := sys.Spawn("sum", func(c *actor.Context) {
		total := 0
		c.Receive(actor.Loop(
			actor.On(func(a Add) { total += a.N }),
			actor.On(func(Total) { c.Reply(total) }),
		))
	})
	for i := 1; i <= 4; i++ {
		sys.Send(sum, Add{N: i})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	total, err := actor.AskAs[int](ctx, sys, sum, Total{})
	fmt.Println(total, err)
	_, err = actor.AskAs[string](ctx, sys, sum, Total{})
	fmt.Println(err)
	// Output:
	// 10 <nil>
	// actor: reply of an unexpected type: ask local/sum: got int, want string
}
