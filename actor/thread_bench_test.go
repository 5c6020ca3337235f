package actor

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkIdleThread measures the memory of 10,000 named thread-style
// actors parked in a one-case Receive: (heap + stacks after - before) / N.
// Each holds a goroutine, whose stack is most of it (BenchmarkIdleActor
// is the event actor's).
func BenchmarkIdleThread(b *testing.B) {
	const n = 10_000
	for range b.N {
		s := newSys(b, WithWatchdog(0))
		names := make([]string, n)
		for i := range names {
			names[i] = "thread" + strconv.Itoa(i)
		}
		var started atomic.Int64
		all := make(chan struct{})
		before := memInUse()
		for i := range n {
			if _, err := s.SpawnThread(names[i], func(t *Thread) {
				if started.Add(1) == n {
					close(all)
				}
				t.Receive(On(func(struct{}) {}))
			}); err != nil {
				b.Fatal(err)
			}
		}
		<-all
		after := memInUse()
		b.ReportMetric(float64(after-before)/n, "bytes/actor")
		runtime.KeepAlive(names)
	}
}

// BenchmarkThreadPingPong: an event actor and a thread-style actor trade
// one message at a time; each hop of the thread's side wakes a parked
// goroutine.
func BenchmarkThreadPingPong(b *testing.B) {
	s := newSys(b, WithWatchdog(0))
	pong := mustSpawnThread(b, s, "", func(t *Thread) {
		for {
			t.Receive(On(func(n int) { t.Reply(n) }))
		}
	})
	done := make(chan struct{})
	b.ResetTimer()
	mustSpawn(b, s, "", func(c *Context) {
		left := b.N
		c.Send(pong, left)
		c.Receive(Loop(On(func(int) {
			if left--; left <= 0 {
				close(done)
				c.Stop()
				return
			}
			c.Send(pong, left)
		})))
	})
	<-done
}
