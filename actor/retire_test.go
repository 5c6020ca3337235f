package actor

import (
	"context"
	"testing"
	"time"
)

// TestRetiredActivationEndsBeforeTheNextOne: an actor whose handler blocks
// its loop past the watchdog's threshold goes on running on the retired
// carrier while the loop moves to a fresh one. Its activation must be over,
// epilogue included, before it can be queued again: the next activation
// runs on the fresh carrier, and the two would share the actor's state
// (the race detector reports it).
func TestRetiredActivationEndsBeforeTheNextOne(t *testing.T) {
	s := newSys(t, WithLoops(1), WithWatchdog(10*time.Millisecond))
	ref := mustSpawn(t, s, "", func(c *Context) {
		forever(c, func() []Case {
			return []Case{On(func(n int) {
				time.Sleep(30 * time.Millisecond) // the watchdog retires the carrier
				c.Reply(n)
			})}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 20 {
		if v, err := s.Ask(ctx, ref, i); err != nil || v != i {
			t.Fatalf("ask %d: %v, %v", i, v, err)
		}
	}
	if s.group.Replacements() == 0 {
		t.Fatal("the watchdog retired no carrier")
	}
}
