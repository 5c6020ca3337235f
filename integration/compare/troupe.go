package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

// Messages of the Troupe workloads. Ping and pong are empty structs, so that
// boxing them allocates nothing in either system.
type (
	tStart struct{}
	tPeer  struct{ ref actor.Ref }
	tPing  struct{}
	tPong  struct{}
	tNext  struct{ ref actor.Ref }
	tToken struct{ left int }
	tStop  struct{}
)

// troupeRunner runs the workloads on Troupe with its default options (one
// event loop per GOMAXPROCS). Actors are written the idiomatic way: a
// looping actor re-installs its receive from inside its handler.
type troupeRunner struct {
	timeout  time.Duration
	reuse    bool // actors re-install a reused case (troupe_reuse.go)
	cases    bool // the pairs' states are actor.Cases built once (troupe_cases.go)
	colocate bool // the ring is spawned on one loop by a parent actor
}

func newTroupe() (*actor.System, error) {
	return actor.New(actor.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
}

func (r troupeRunner) shutdown(sys *actor.System, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	return errors.Join(err, sys.Shutdown(ctx))
}

// tPonger waits for its pinger's Ref, then answers every ping with a pong.
func tPonger(c *actor.Context) {
	c.Receive(actor.On(func(p tPeer) { tPongLoop(c, p.ref) }))
}

func tPongLoop(c *actor.Context, peer actor.Ref) {
	c.Receive(actor.On(func(tPing) {
		c.Send(peer, tPong{})
		tPongLoop(c, peer)
	}))
}

// tPinger returns the behavior of pinger number pair: on tStart it
// introduces itself to its ponger, sends inflight pings and answers every
// pong with a ping until st.stop; then it reports and stops.
func tPinger(pong actor.Ref, pair, inflight int, st *pairState) actor.Behavior {
	return func(c *actor.Context) {
		c.Receive(actor.On(func(tStart) {
			c.Send(pong, tPeer{c.Self()})
			for range inflight {
				c.Send(pong, tPing{})
			}
			tPingLoop(c, pong, pair, 0, st)
		}))
	}
}

func tPingLoop(c *actor.Context, pong actor.Ref, pair int, n int64, st *pairState) {
	c.Receive(actor.On(func(tPong) {
		n++
		if st.stop.Load() {
			st.report(pair, n)
			return // the pinger stops; later pongs are dead letters
		}
		c.Send(pong, tPing{})
		tPingLoop(c, pong, pair, n, st)
	}))
}

func (r troupeRunner) pingPong(pairs, inflight int, d time.Duration, colocated bool) (v float64, err error) {
	sys, err := newTroupe()
	if err != nil {
		return 0, err
	}
	defer func() { err = r.shutdown(sys, err) }()
	st := newPairState(pairs)
	pingers := make([]actor.Ref, pairs)
	for i := range pairs {
		if pingers[i], err = r.spawnPair(sys, i, inflight, st, colocated); err != nil {
			return 0, err
		}
	}
	return st.measure(func() {
		for _, p := range pingers {
			sys.Send(p, tStart{})
		}
	}, d, r.timeout)
}

// spawnPair spawns one ping-pong pair and returns its pinger: from plain
// code (round-robin over the loops, so the two land on different loops), or
// colocated, by a parent actor that spawns both on its own loop.
func (r troupeRunner) spawnPair(sys *actor.System, pair, inflight int, st *pairState, colocated bool) (actor.Ref, error) {
	if !colocated {
		pong, err := sys.Spawn("", r.ponger())
		if err != nil {
			return actor.Ref{}, err
		}
		return sys.Spawn("", r.pinger(pong, pair, inflight, st))
	}
	type spawned struct {
		ping actor.Ref
		err  error
	}
	out := make(chan spawned, 1)
	_, err := sys.Spawn("", func(c *actor.Context) {
		pong, err := c.Spawn("", r.ponger(), actor.Colocated())
		if err != nil {
			out <- spawned{err: err}
			return
		}
		ping, err := c.Spawn("", r.pinger(pong, pair, inflight, st), actor.Colocated())
		out <- spawned{ping, err}
		// The parent stops here; its children live on.
	})
	if err != nil {
		return actor.Ref{}, err
	}
	s := <-out
	return s.ping, s.err
}

// tRingMember waits for its successor, then forwards the token until its
// last hop.
func tRingMember(st *ringState) actor.Behavior {
	return func(c *actor.Context) {
		c.Receive(actor.On(func(m tNext) {
			st.ready.countDown()
			tRingLoop(c, m.ref, st)
		}))
	}
}

func tRingLoop(c *actor.Context, next actor.Ref, st *ringState) {
	c.Receive(actor.On(func(t tToken) {
		if t.left == 0 {
			st.finish()
		} else {
			c.Send(next, tToken{t.left - 1})
		}
		tRingLoop(c, next, st)
	}))
}

func (r troupeRunner) ring(n, hops int) (v float64, err error) {
	sys, err := newTroupe()
	if err != nil {
		return 0, err
	}
	defer func() { err = r.shutdown(sys, err) }()
	st := newRingState(n)
	refs := make([]actor.Ref, n)
	if r.colocate {
		spawned := make(chan error, 1)
		if _, err := sys.Spawn("", func(c *actor.Context) {
			for i := range refs {
				var err error
				if refs[i], err = c.Spawn("", r.ringMember(st), actor.Colocated()); err != nil {
					spawned <- err
					return
				}
			}
			spawned <- nil
		}); err != nil {
			return 0, err
		}
		if err := <-spawned; err != nil {
			return 0, err
		}
	} else {
		for i := range refs {
			if refs[i], err = sys.Spawn("", r.ringMember(st)); err != nil {
				return 0, err
			}
		}
	}
	for i, ref := range refs {
		sys.Send(ref, tNext{refs[(i+1)%n]})
	}
	// hops hops: the member that receives left == 0 took the last one.
	return st.run(func() { sys.Send(refs[0], tToken{hops}) }, hops, r.timeout)
}

// tIdle returns the behavior of an idle actor: it counts itself started
// and waits in a one-case receive.
func tIdle(started *latch) actor.Behavior {
	return func(c *actor.Context) {
		started.countDown()
		c.Receive(actor.On(func(tStop) {}))
	}
}

func (r troupeRunner) spawn(n int, untilStarted bool) (v float64, err error) {
	sys, err := newTroupe()
	if err != nil {
		return 0, err
	}
	defer func() { err = r.shutdown(sys, err) }()
	started := newLatch(n)
	b := tIdle(started)
	t0 := time.Now()
	for range n {
		if _, err := sys.Spawn("", b); err != nil {
			return 0, err
		}
	}
	elapsed := time.Since(t0)
	if err := started.wait("spawn", r.timeout); err != nil {
		return 0, err
	}
	if untilStarted {
		elapsed = time.Since(t0)
	}
	return float64(n) / elapsed.Seconds(), nil
}

func (r troupeRunner) idleMemory(n int) (v float64, err error) {
	sys, err := newTroupe()
	if err != nil {
		return 0, err
	}
	defer func() { err = r.shutdown(sys, err) }()
	started := newLatch(n)
	b := tIdle(started)
	goroutines := runtime.NumGoroutine()
	before := memInUse()
	for i := range n {
		if _, err := sys.Spawn("a"+strconv.Itoa(i), b); err != nil {
			return 0, fmt.Errorf("spawn a%d: %w", i, err)
		}
	}
	if err := started.wait("idle actors", r.timeout); err != nil {
		return 0, err
	}
	settle(goroutines)
	v = perActor(before, n)
	runtime.KeepAlive(sys)
	return v, nil
}
