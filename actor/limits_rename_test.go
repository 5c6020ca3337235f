package actor

import (
	"testing"
	"time"
)

// A sender that last sent to a dead actor with a mailbox limit sends to
// its name again after a new actor took it: the dead actor counts the
// message, its closed inbox refuses it, and the node goes on to the new
// actor. The count must be given back, not carried: the new actor, which
// has no limit, once died of it (a nil counter) when it freed the node.
func TestSendToARenamedActorCarriesNoCount(t *testing.T) {
	s := newSys(t)
	type stop struct{}
	type again struct{}
	old := mustSpawn(t, s, "t", func(c *Context) {
		c.Receive(On(func(stop) { c.Stop() }))
	}, WithMailboxLimit(2))
	sent := make(chan struct{}, 1)
	sender := mustSpawn(t, s, "s", func(c *Context) {
		c.Send(old, "saved") // counted by t, never given back: t stops first
		c.Send(old, stop{})
		sent <- struct{}{}
		c.Receive(On(func(again) { c.Send(old, 1); c.Send(old, 2) }))
	})
	recv(t, sent)
	recv(t, watcher(t, s, old))
	got := make(chan int, 2)
	nt := mustSpawn(t, s, "t", func(c *Context) {
		var h Case
		h = On(func(v int) { got <- v; c.Receive(h) })
		c.Receive(h)
	})
	downs := watcher(t, s, nt)
	s.Send(sender, again{})
	for want := 1; want <= 2; want++ {
		select {
		case v := <-got:
			if v != want {
				t.Fatalf("got %d, want %d", v, want)
			}
		case d := <-downs:
			t.Fatalf("the new actor died: %v", d.Reason)
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d did not arrive within 10 s", want)
		}
	}
	// The second message was handled after the first node was freed.
	select {
	case d := <-downs:
		t.Fatalf("the new actor died: %v", d.Reason)
	default:
	}
}
