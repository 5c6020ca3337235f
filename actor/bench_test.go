package actor

import (
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

type ping struct{ n int }

// The benchmark actors build their case once and re-install it: an actor
// whose behavior does not change needs no allocation per message.

// pongForever answers every ping with a ping to its sender.
func pongForever(c *Context) {
	var h Case
	h = On(func(p ping) { c.Send(c.Sender(), p); c.Receive(h) })
	c.Receive(h)
}

// pingUntil sends `inflight` pings to pong and one more per answer until
// `total` answers came back, then signals done.
func pingUntil(c *Context, pong Ref, inflight, total int, done chan<- struct{}) {
	for i := 0; i < inflight && i < total; i++ {
		c.Send(pong, ping{i})
	}
	got, sent := 0, inflight
	var h Case
	h = On(func(p ping) {
		if got++; got == total {
			done <- struct{}{}
			return
		}
		if sent < total {
			sent++
			c.Send(pong, p)
		}
		c.Receive(h)
	})
	c.Receive(h)
}

// The "paper style" actors install a fresh case per message, as the Scala
// actors paper writes them: one closure (and its captures) per message.

// pongPaper learns its partner from the first ping, then answers each ping.
func pongPaper(c *Context) {
	c.Receive(On(func(p ping) { peer := c.Sender(); c.Send(peer, p); pongPaperLoop(c, peer) }))
}

func pongPaperLoop(c *Context, peer Ref) {
	c.Receive(On(func(p ping) { c.Send(peer, p); pongPaperLoop(c, peer) }))
}

// pingPaper is pingUntil in paper style.
func pingPaper(c *Context, pong Ref, inflight, total int, done chan<- struct{}) {
	for i := 0; i < inflight && i < total; i++ {
		c.Send(pong, ping{i})
	}
	pingPaperLoop(c, pong, 0, inflight, total, done)
}

func pingPaperLoop(c *Context, pong Ref, got, sent, total int, done chan<- struct{}) {
	c.Receive(On(func(p ping) {
		if got++; got == total {
			done <- struct{}{}
			return
		}
		if sent < total {
			sent++
			c.Send(pong, p)
		}
		pingPaperLoop(c, pong, got, sent, total, done)
	}))
}

// BenchmarkPaperClosures makes, per op, the closures one round trip of
// the paper-style actors makes (pongPaperLoop's and pingPaperLoop's, same
// captures, installed where the next call finds them), on every core and
// with no actor: the floor under BenchmarkPairs/8x100/cross-loop-paper
// that no runtime taking closures can go below.
func BenchmarkPaperClosures(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var pongs, pings closureSlot
		peer := Ref{s: "local/$pong.1"}
		pongClosures(&pongs, peer)
		pingClosures(&pings, peer, 0, 0, 1<<62, nil)
		for pb.Next() {
			pongs.f(ping{})
			pings.f(ping{})
		}
	})
}

// closureSlot stands for an actor's installed continuation.
type closureSlot struct{ f func(ping) }

//go:noinline
func (s *closureSlot) install(f func(ping)) { s.f = f }

func pongClosures(s *closureSlot, peer Ref) {
	s.install(func(p ping) { _ = peer; pongClosures(s, peer) })
}

func pingClosures(s *closureSlot, pong Ref, got, sent, total int, done chan<- struct{}) {
	s.install(func(p ping) {
		if got++; got == total {
			done <- struct{}{}
			return
		}
		if sent < total {
			sent++
			_ = pong
		}
		pingClosures(s, pong, got, sent, total, done)
	})
}

func benchPairs(b *testing.B, pairs, inflight int, colocate bool) {
	benchPairsStyle(b, pairs, inflight, colocate, false)
}

// pongPaper2 is pongPaper with a second case per Receive, as README's
// counter has: two fresh closures per message.
func pongPaper2(c *Context) {
	c.Receive(
		On(func(p ping) { peer := c.Sender(); c.Send(peer, p); pongPaper2Loop(c, peer) }),
		On(func(struct{}) { c.Stop() }),
	)
}

func pongPaper2Loop(c *Context, peer Ref) {
	c.Receive(
		On(func(p ping) { c.Send(peer, p); pongPaper2Loop(c, peer) }),
		On(func(struct{}) { c.Send(peer, ping{}); c.Stop() }),
	)
}

func benchPairsStyle(b *testing.B, pairs, inflight int, colocate, paper bool) {
	ponger, pinger := Behavior(pongForever), pingUntil
	if paper {
		ponger, pinger = pongPaper, pingPaper
	}
	benchPairsWith(b, pairs, inflight, colocate, ponger, pinger)
}

func benchPairsWith(b *testing.B, pairs, inflight int, colocate bool, ponger Behavior,
	pinger func(c *Context, pong Ref, inflight, total int, done chan<- struct{}), opts ...Option) {
	s := newSys(b, append([]Option{WithWatchdog(0)}, opts...)...)
	done := make(chan struct{}, pairs)
	per := max(b.N/pairs, inflight)
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	start := time.Now()
	m := startMeter()
	for range pairs {
		if colocate {
			mustSpawn(b, s, "", func(c *Context) {
				pong, _ := c.Spawn("", ponger, Colocated())
				pinger(c, pong, inflight, per, done)
			})
			continue
		}
		pong := mustSpawn(b, s, "", ponger)
		mustSpawn(b, s, "", func(c *Context) { pinger(c, pong, inflight, per, done) })
	}
	for range pairs {
		<-done
	}
	el := time.Since(start)
	b.StopTimer()
	// Each round trip is two messages.
	b.ReportMetric(float64(2*per*pairs)/el.Seconds(), "msgs/s")
	m.report(b, 2*per*pairs)
}

// BenchmarkPingPong: one pair, one message in flight. cross-loop places the
// two actors on different loops (System.Spawn round-robin); colocated puts
// them on one loop.
func BenchmarkPingPong(b *testing.B) {
	b.Run("cross-loop", func(b *testing.B) { benchPairs(b, 1, 1, false) })
	b.Run("colocated", func(b *testing.B) { benchPairs(b, 1, 1, true) })
}

// BenchmarkPairs: 8 pairs with 1 and with 100 messages in flight per pair,
// with each pair split over two loops (round-robin) or colocated on one;
// cross-loop-paper installs a fresh case per message (issue 22's workload),
// and -2cases two on the ponger's side.
func BenchmarkPairs(b *testing.B) {
	b.Run("8x1/cross-loop", func(b *testing.B) { benchPairs(b, 8, 1, false) })
	b.Run("8x1/colocated", func(b *testing.B) { benchPairs(b, 8, 1, true) })
	b.Run("8x100/cross-loop", func(b *testing.B) { benchPairs(b, 8, 100, false) })
	b.Run("8x100/colocated", func(b *testing.B) { benchPairs(b, 8, 100, true) })
	b.Run("8x100/cross-loop-paper", func(b *testing.B) { benchPairsStyle(b, 8, 100, false, true) })
	b.Run("8x100/cross-loop-paper-2cases", func(b *testing.B) { benchPairsWith(b, 8, 100, false, pongPaper2, pingPaper) })
	b.Run("8x100/cross-loop-cases", func(b *testing.B) { benchPairsWith(b, 8, 100, false, pongCases, pingCases) })
}

type token struct{ hops int }

// BenchmarkRing passes one token b.N hops around a ring of actors: spawned
// round-robin over the loops from plain code (every hop crosses loops), or
// colocated on one loop by a parent actor.
func BenchmarkRing(b *testing.B) {
	for _, size := range []int{10_000, 100_000} {
		for _, colocate := range []bool{false, true} {
			name := strconv.Itoa(size)
			if colocate {
				name += "/colocated"
			}
			b.Run(name, func(b *testing.B) { benchRing(b, size, colocate) })
		}
	}
}

func benchRing(b *testing.B, size int, colocate bool) {
	s := newSys(b, WithWatchdog(0))
	done := make(chan struct{})
	refs := make([]Ref, size)
	next := make([]Ref, size)
	member := func(i int) Behavior {
		return func(c *Context) {
			var h Case
			h = On(func(t token) {
				if t.hops == 0 {
					close(done)
					return
				}
				c.Send(next[i], token{t.hops - 1})
				c.Receive(h)
			})
			c.Receive(h)
		}
	}
	spawned := make(chan error, 1)
	spawnAll := func(spawn func(string, Behavior, ...SpawnOption) (Ref, error), opts ...SpawnOption) {
		for i := range size {
			ref, err := spawn("ring"+strconv.Itoa(i), member(i), opts...)
			if err != nil {
				spawned <- err
				return
			}
			refs[i] = ref
		}
		for i := range size {
			next[i] = refs[(i+1)%size]
		}
		spawned <- nil
	}
	if colocate {
		mustSpawn(b, s, "", func(c *Context) { spawnAll(c.Spawn, Colocated()) })
	} else {
		spawnAll(s.Spawn)
	}
	if err := <-spawned; err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	s.Send(refs[0], token{b.N})
	<-done
	el := time.Since(start)
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/hop")
}

// BenchmarkSpawn measures how fast plain code spawns actors that wait in a
// receive (each behavior has run by the end).
func BenchmarkSpawn(b *testing.B) {
	s := newSys(b, WithWatchdog(0))
	var started atomic.Int64
	all := make(chan struct{})
	n := int64(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := s.Spawn("", func(c *Context) {
			if started.Add(1) == n {
				close(all)
			}
			c.Receive(On(func(struct{}) {}))
		}); err != nil {
			b.Fatal(err)
		}
	}
	<-all
	el := time.Since(start)
	b.ReportMetric(float64(b.N)/el.Seconds(), "actors/s")
}

// BenchmarkIdleActor measures the memory of 1,000,000 named actors waiting
// in a one-case Receive: (heap + stacks after - before) / N.
func BenchmarkIdleActor(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		s := newSys(b, WithWatchdog(0))
		names := make([]string, n) // the names exist before, as they would in a program
		for i := range names {
			names[i] = "actor" + strconv.Itoa(i)
		}
		var started atomic.Int64
		all := make(chan struct{})
		before := memInUse()
		for i := range n {
			if _, err := s.Spawn(names[i], func(c *Context) {
				if started.Add(1) == n {
					close(all)
				}
				c.Receive(On(func(struct{}) {}))
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

func memInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// BenchmarkSelectiveReceive: each matching message is found behind 100
// saved non-matching ones.
func BenchmarkSelectiveReceive(b *testing.B) {
	s := newSys(b, WithWatchdog(0))
	done := make(chan struct{})
	n := b.N
	var wait func(c *Context, left int)
	wait = func(c *Context, left int) {
		c.Receive(On(func(int) {
			if left == 1 {
				close(done)
				return
			}
			wait(c, left-1)
		}))
	}
	ref := mustSpawn(b, s, "", func(c *Context) {
		c.Receive(On(func(struct{}) { wait(c, n) }))
	})
	for i := range 100 {
		s.Send(ref, fmt.Sprint("skip", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	s.Send(ref, struct{}{})
	for i := range n {
		s.Send(ref, i)
	}
	<-done
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
}
