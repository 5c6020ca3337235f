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

// counter is the paper's counter: state lives in the argument, and Lock
// waits for Unlock in a nested receive without inverting control.
func counter(c *actor.Context, v int) {
	c.Receive(
		actor.On(func(Incr) { counter(c, v+1) }),
		actor.On(func(m Value) { c.Send(m.To, v); counter(c, v) }),
		actor.On(func(m Lock) {
			c.Send(m.To, v)
			c.Receive(actor.On(func(u Unlock) { counter(c, u.V) }))
		}),
	)
}

// The counter of Haller & Odersky with Lock/Unlock: while locked, the
// counter only accepts Unlock; the Incr sent meanwhile waits in the mailbox
// and is handled, in order, after the Unlock.
func Example_counter() {
	sys, err := actor.New()
	if err != nil {
		panic(err)
	}
	ctr, _ := sys.Spawn("counter", func(c *actor.Context) { counter(c, 0) })
	done := make(chan struct{})
	sys.Spawn("client", func(c *actor.Context) {
		c.Send(ctr, Incr{})
		c.Send(ctr, Incr{})
		c.Send(ctr, Lock{To: c.Self()})
		c.Receive(actor.On(func(v int) {
			fmt.Println("locked at", v)
			c.Send(ctr, Incr{}) // kept until the counter is unlocked
			c.Send(ctr, Unlock{V: v * 10})
			c.Send(ctr, Value{To: c.Self()})
			c.Receive(actor.On(func(v int) {
				fmt.Println("value", v)
				close(done)
			}))
		}))
	})
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// locked at 2
	// value 21
}

// System.Ask waits for a reply from plain Go code; the actor answers with
// Reply.
func ExampleSystem_Ask() {
	sys, _ := actor.New()
	defer sys.Shutdown(context.Background())
	echo, _ := sys.Spawn("echo", func(c *actor.Context) {
		var loop func()
		loop = func() {
			c.Receive(actor.On(func(s string) { c.Reply("echo: " + s); loop() }))
		}
		loop()
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
