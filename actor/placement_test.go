package actor

import (
	"testing"
)

type roundTrip struct{ loop int }

// pairOnLoops spawns a ponger and a pinger from plain code (round-robin:
// on different loops when there are two) and returns a channel that gets,
// for each of n round trips, whether the two ran on one loop.
func pairOnLoops(t *testing.T, s *System, n int) <-chan bool {
	t.Helper()
	same := make(chan bool, n)
	pong := mustSpawn(t, s, "", func(c *Context) {
		var h Case
		h = On(func(int) { c.Reply(roundTrip{c.loop.Index()}); c.Receive(h) })
		c.Receive(h)
	})
	mustSpawn(t, s, "", func(c *Context) {
		left := n
		var h Case
		h = On(func(r roundTrip) {
			same <- r.loop == c.loop.Index()
			if left--; left == 0 {
				c.Receive(On(func(struct{}) {})) // stays, idle
				return
			}
			c.Send(pong, 0)
			c.Receive(h)
		})
		c.Send(pong, 0)
		c.Receive(h)
	})
	return same
}

func TestWokenActorMovesToItsPartnersLoop(t *testing.T) {
	s := newSys(t, WithLoops(2))
	const n = 100
	same := pairOnLoops(t, s, n)
	met := 0
	for range n {
		if recv(t, same) {
			met++
		}
	}
	// The first round trips may cross loops (the ponger may not be idle
	// yet when the first ping comes); then the two share a loop.
	if met < n/2 {
		t.Fatalf("the pair shared a loop in %d of %d round trips", met, n)
	}
}

func TestMovedActorsStayBalanced(t *testing.T) {
	s := newSys(t, WithLoops(2))
	const pairs, n = 8, 200
	chans := make([]<-chan bool, pairs)
	for i := range chans {
		chans[i] = pairOnLoops(t, s, n)
	}
	for _, ch := range chans {
		for range n {
			recv(t, ch)
		}
	}
	a, b := s.residents[0].n.Load(), s.residents[1].n.Load()
	if a+b != 2*pairs || a-b > 2 || b-a > 2 {
		t.Fatalf("loops hold %d and %d actors, want %d in all, balanced", a, b, 2*pairs)
	}
}
