package actor_test

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

// A thread-style actor reads lines with a blocking call (a terminal, a
// file or a socket would do; here a string) and asks an event actor about
// each one, waiting for the reply in a blocking Ask. The event actor
// never notices that its partner is a thread.
func ExampleSystem_SpawnThread() {
	s, err := actor.New()
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())
	upper, _ := s.Spawn("upper", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.On(func(line string) { c.Reply(strings.ToUpper(line)) })))
	})
	done := make(chan struct{})
	_, _ = s.SpawnThread("reader", func(t *actor.Thread) {
		defer close(done)
		in := bufio.NewScanner(strings.NewReader("hello\nthreads and events\n"))
		for in.Scan() { // blocks, on the thread's own goroutine
			reply, err := t.Ask(upper, in.Text(), time.Second)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Println(reply)
		}
	})
	<-done
	// Output:
	// HELLO
	// THREADS AND EVENTS
}

// A thread-style actor in blocking style: Receive returns after its case
// ran, and Reply answers the message received last.
func ExampleThread_Receive() {
	s, err := actor.New()
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())
	type add struct{ a, b int }
	ref, _ := s.SpawnThread("adder", func(t *actor.Thread) {
		for {
			var q add
			t.Receive(actor.On(func(m add) { q = m }))
			t.Reply(q.a + q.b)
		}
	})
	sum, err := s.Ask(context.Background(), ref, add{2, 3})
	fmt.Println(sum, err)
	// Output: 5 <nil>
}
