package actor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

type Crash struct{}
type Count struct{}

// A supervisor restarts a child that fails: the worker's state starts
// over, and its name reaches the new worker.
func ExampleSupervisor() {
	sys, _ := actor.New(actor.WithLogger(slog.New(slog.DiscardHandler)))
	defer sys.Shutdown(context.Background())
	worker := func(c *actor.Context) {
		n := 0
		c.Receive(actor.Loop(
			actor.On(func(Count) { n++; c.Reply(n) }),
			actor.On(func(Crash) { panic("worker crashed") }),
		))
	}
	sup, _ := sys.Spawn("sup", actor.Supervisor(actor.SupervisorSpec{
		Strategy: actor.OneForOne, MaxRestarts: 3, Period: time.Minute,
		Children: []actor.ChildSpec{{Name: "worker", Start: worker}},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	children, _ := actor.AskAs[[]actor.Ref](ctx, sys, sup, actor.WhichChildren{})
	ref := children[0] // "<peer>/worker", whichever worker runs
	for range 2 {
		n, _ := actor.AskAs[int](ctx, sys, ref, Count{})
		fmt.Println("count", n)
	}
	sys.Send(ref, Crash{})
	for { // until the restarted worker answers
		n, err := actor.AskAs[int](ctx, sys, ref, Count{})
		if err == nil {
			fmt.Println("after the restart, count", n)
			break
		}
		if !errors.Is(err, actor.ErrNoSuchActor) || ctx.Err() != nil {
			fmt.Println(err)
			break
		}
	}
	// Output:
	// count 1
	// count 2
	// after the restart, count 1
}

// ReceiveWithin waits for a message for a while; its Timeout case runs
// when none came.
func ExampleContext_ReceiveWithin() {
	sys, _ := actor.New()
	defer sys.Shutdown(context.Background())
	done := make(chan string)
	sys.Spawn("", func(c *actor.Context) {
		c.ReceiveWithin(20*time.Millisecond,
			actor.On(func(s string) { done <- "got " + s }),
			actor.Timeout(func() { done <- "nothing within 20ms" }),
		)
	})
	fmt.Println(<-done)
	// Output: nothing within 20ms
}

// Members of a group each get what is broadcast to it, once: with
// Context.Broadcast from an actor (a member or not) or System.Publish from
// plain code. On every peer when the node has a group transport
// (peer.WithGroups); here, locally.
func ExampleContext_Join() {
	sys, _ := actor.New()
	defer sys.Shutdown(context.Background())
	got := make(chan string, 2)
	for _, name := range []string{"ann", "bob"} {
		joined := make(chan struct{})
		sys.Spawn(name, func(c *actor.Context) {
			c.Join("room")
			close(joined)
			c.Receive(actor.Loop(actor.On(func(s string) { got <- c.Self().Name() + " got " + s })))
		})
		<-joined
	}
	both := func() []string { // the two deliveries, in either order
		var lines []string
		for range 2 {
			select {
			case s := <-got:
				lines = append(lines, s)
			case <-time.After(5 * time.Second):
				lines = append(lines, "nothing within 5s")
			}
		}
		slices.Sort(lines)
		return lines
	}
	sys.Spawn("host", func(c *actor.Context) { c.Broadcast("room", "welcome") }) // not a member
	fmt.Println(both())
	sys.Publish("room", actor.Ref{}, "bye")
	fmt.Println(both())
	// Output:
	// [ann got welcome bob got welcome]
	// [ann got bye bob got bye]
}
