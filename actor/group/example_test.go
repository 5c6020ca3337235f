package group_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
)

// Members of a group each get what is broadcast to it, once: with
// Broadcast from an actor (a member or not) or Publish from
// plain code. On every peer when the node has a group transport
// (peer.WithGroups); here, locally.
func ExampleJoin() {
	sys, _ := actor.New()
	defer sys.Shutdown(context.Background())
	got := make(chan string, 2)
	for _, name := range []string{"ann", "bob"} {
		joined := make(chan struct{})
		sys.Spawn(name, func(c *actor.Context) {
			group.Join(c, "room")
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
	sys.Spawn("host", func(c *actor.Context) { group.Broadcast(c, "room", "welcome") }) // not a member
	fmt.Println(both())
	group.Publish(sys, "room", actor.Ref{}, "bye")
	fmt.Println(both())
	// Output:
	// [ann got welcome bob got welcome]
	// [ann got bye bob got bye]
}
