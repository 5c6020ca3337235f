package actor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
