package actor

import (
	"testing"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

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
	in := s.port.NewInbound()
	for i := range total {
		// Runs of one, two and three messages for the same actor.
		to := a
		if i%6 >= 3 {
			to = b
		}
		in.Add(&envelope{To: to, From: far, Msg: i})
		if i%50 == 0 {
			in.Add(&envelope{To: nobody, From: far, Msg: -1})
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

// Messages from an Inbound that an actor keeps for a later receive are
// moved out of their node blocks, so that the blocks are recycled (Close
// gives back the nodes never handed out) while the messages stay intact
// and in order.
func TestInboundSavedMessagesLeaveTheirBlocks(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	type marker struct{}
	pending := make(chan [2]int32, 1)
	got := make(chan int, 2*blockNodes)
	var blocks [2]*nodeBlock
	a := mustSpawn(t, s, "a", func(c *Context) {
		c.Receive(On(func(marker) {
			// Every int before the marker was saved, so no block holds one.
			pending <- [2]int32{blocks[0].pending.Load(), blocks[1].pending.Load()}
			var h Case
			h = On(func(m int) { got <- m; c.Receive(h) })
			c.Receive(h)
		}))
	})
	far, _ := ParseRef("them/x")
	in := s.port.NewInbound()
	total := blockNodes + 1 // one block full, one more
	for i := range total {
		if i == blockNodes {
			blocks[0] = in.blk
		}
		in.Add(&envelope{To: a, From: far, Msg: i})
	}
	blocks[1] = in.blk
	if blocks[0] == nil || blocks[1] == nil || blocks[0] == blocks[1] {
		t.Fatal("the messages did not take two blocks")
	}
	in.Add(&envelope{To: a, From: far, Msg: marker{}})
	in.Close() // gives back the second block's unused nodes
	if p := recv(t, pending); p != [2]int32{0, 1} {
		t.Fatalf("pending nodes of the blocks %v, want [0 1] (the marker's)", p)
	}
	for i := range total {
		if m := recv(t, got); m != i {
			t.Fatalf("got %d, want %d", m, i)
		}
	}
}

// When a handler stops its actor, or panics, the messages the activation
// had already taken from the inbox and not handled yet become dead letters,
// in order; none is lost or handled twice.
func TestMessagesBehindAnEndingStepBecomeDeadLetters(t *testing.T) {
	for _, how := range []string{"stop", "panic", "no receive"} {
		t.Run(how, func(t *testing.T) {
			letters := make(chan any, 16)
			s := newSys(t, WithPeer("me"), WithLogger(testutil.QuietLogger()),
				WithDeadLetterHook(func(d DeadLetter) { letters <- d.Msg }))
			handled := make(chan int, 16)
			ready := make(chan struct{})
			a := mustSpawn(t, s, "a", func(c *Context) {
				var h Case
				h = On(func(m int) {
					handled <- m
					if m < 3 {
						c.Receive(h)
						return
					}
					switch how {
					case "stop":
						c.Receive(h)
						c.Stop()
					case "panic":
						panic("kaput")
					}
				})
				c.Receive(h)
				close(ready)
			})
			recv(t, ready)
			downs := watcher(t, s, a)
			far, _ := ParseRef("them/x")
			in := s.port.NewInbound()
			for i := range 10 { // one run: taken from the inbox at once
				in.Add(&envelope{To: a, From: far, Msg: i})
			}
			in.Close()
			recv(t, downs)
			for want := range 4 {
				if m := recv(t, handled); m != want {
					t.Fatalf("handled %d, want %d", m, want)
				}
			}
			for want := 4; want < 10; want++ {
				if m := recv(t, letters); m != want {
					t.Fatalf("dead letter %v, want %d", m, want)
				}
			}
			select {
			case m := <-handled:
				t.Fatalf("%d handled after the actor ended", m)
			case m := <-letters:
				t.Fatalf("extra dead letter %v", m)
			default:
			}
		})
	}
}

// BenchmarkInbound: messages from a remote peer handed over by an Inbound,
// as a stream reader does, to one actor on another loop; at most four
// windows of messages in flight.
func BenchmarkInbound(b *testing.B) {
	const window, batch = 10_000, 256
	s := newSys(b, WithPeer("me"), WithWatchdog(0))
	acks := make(chan struct{}, b.N/window+1)
	sink := mustSpawn(b, s, "sink", func(c *Context) {
		got := 0
		var h Case
		h = On(func(m benchBlob) {
			if got++; got%window == 0 || got == b.N {
				acks <- struct{}{}
			}
			c.Receive(h)
		})
		c.Receive(h)
	})
	far, _ := ParseRef("them/source")
	in := s.port.NewInbound()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testutil.ProcessCPU()
	waited := 0
	for i := range b.N {
		if i >= 4*window && i%window == 0 {
			<-acks
			waited++
		}
		// A new message, as a decoder makes.
		in.Add(&envelope{To: sink, From: far, Msg: benchBlob{Data: make([]byte, 100)}})
		if in.Len() == batch {
			in.Flush()
		}
	}
	in.Close()
	// The sink acks every window and the last message: ceil(N/window)
	// acks (b.N = 10,000 once waited for one that never came).
	for ; waited < (b.N+window-1)/window; waited++ {
		<-acks
	}
	b.ReportMetric(float64((testutil.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

type benchBlob struct{ Data []byte }
