package actor

import "testing"

// An Inbound hands each actor its messages in order, across runs for
// different actors and across flushes, and makes a message for an unknown
// actor a dead letter.
func TestInboundDeliversInOrder(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	const total = 300
	got := make(chan [2]int, 2*total)
	collect := func(id int) Behavior {
		return func(c *Context) {
			var h Case
			h = On(func(m int) { got <- [2]int{id, m}; c.Receive(h) })
			c.Receive(h)
		}
	}
	a := mustSpawn(t, s, "a", collect(0))
	b := mustSpawn(t, s, "b", collect(1))
	nobody, err := NewRef("me", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	far, _ := ParseRef("them/x")
	in := s.NewInbound()
	for i := range total {
		// Runs of one, two and three messages for the same actor.
		to := a
		if i%6 >= 3 {
			to = b
		}
		in.Add(&Envelope{To: to, From: far, Msg: i})
		if i%50 == 0 {
			in.Add(&Envelope{To: nobody, From: far, Msg: -1})
		}
		if i%7 == 0 {
			if in.Len() == 0 {
				t.Fatal("Len is 0 after Add")
			}
			in.Flush()
			if in.Len() != 0 {
				t.Fatalf("Len is %d after Flush", in.Len())
			}
		}
	}
	in.Flush()
	last := [2]int{-1, -1}
	for range total {
		g := recv(t, got)
		if g[1] <= last[g[0]] {
			t.Fatalf("actor %d got %d after %d", g[0], g[1], last[g[0]])
		}
		last[g[0]] = g[1]
	}
	if dl := s.DeadLetters(); dl != total/50 {
		t.Fatalf("%d dead letters, want %d", dl, total/50)
	}
}
