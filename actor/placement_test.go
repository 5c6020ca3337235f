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
		h = On(func(int) { c.Reply(roundTrip{c.loop.Load().Index()}); c.Receive(h) })
		c.Receive(h)
	})
	mustSpawn(t, s, "", func(c *Context) {
		left := n
		var h Case
		h = On(func(r roundTrip) {
			same <- r.loop == c.loop.Load().Index()
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

func TestBusyPartnersMeetOnOneLoop(t *testing.T) {
	s := newSys(t, WithLoops(2))
	const pairs, inflight, n = 8, 100, 5000
	same := make(chan bool, pairs)
	for range pairs {
		pong := mustSpawn(t, s, "", func(c *Context) {
			var h Case
			h = On(func(int) { c.Reply(roundTrip{c.loop.Load().Index()}); c.Receive(h) })
			c.Receive(h)
		})
		mustSpawn(t, s, "", func(c *Context) {
			for range inflight {
				c.Send(pong, 0)
			}
			left := n
			var h Case
			h = On(func(r roundTrip) {
				if left--; left == 0 {
					same <- r.loop == c.loop.Load().Index()
					c.Receive(On(func(struct{}) {}))
					return
				}
				c.Send(pong, 0)
				c.Receive(h)
			})
			c.Receive(h)
		})
	}
	for range pairs {
		if !recv(t, same) {
			t.Fatal("a pair still crossed loops at its last round trip")
		}
	}
}

// idlePair spawns two idle actors, on loops 0 and 1, and returns them in
// the order of the tie rule (before) first.
func idlePair(t *testing.T, s *System) (lo, hi *Context) {
	t.Helper()
	started := make(chan struct{}, 2)
	idle := func(c *Context) { started <- struct{}{}; c.Receive(On(func(struct{}) {})) }
	a, b := mustSpawn(t, s, "", idle), mustSpawn(t, s, "", idle)
	recv(t, started)
	recv(t, started)
	lo, hi = s.names.load(a.Name()), s.names.load(b.Name())
	if before(hi, lo) {
		lo, hi = hi, lo
	}
	return lo, hi
}

func TestFollowBreaksTiesByAddress(t *testing.T) {
	s := newSys(t, WithLoops(2))
	lo, hi := idlePair(t, s)
	hi.lastTo = lo
	hi.follow() // equally loaded loops: the higher address stays
	if hi.loop.Load() == lo.loop.Load() {
		t.Fatal("the actor at the higher address moved on a tie")
	}
	lo.lastTo = hi
	lo.follow()
	if lo.loop.Load() != hi.loop.Load() {
		t.Fatal("the actor at the lower address did not move on a tie")
	}
	if n := s.residents[hi.loop.Load().Index()].n.Load(); n != 2 {
		t.Fatalf("the partners' loop counts %d actors, want 2", n)
	}
	lo.lastTo, hi.lastTo = nil, nil
}
