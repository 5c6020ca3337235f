package main

import (
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Messages of the Proto.Actor workloads, the same shapes as Troupe's.
type (
	pStart struct{}
	pPeer  struct{ pid *actor.PID }
	pPing  struct{}
	pPong  struct{}
	pNext  struct{ pid *actor.PID }
	pToken struct{ left int }
)

// protoRunner runs the workloads on Proto.Actor with what a user gets by
// default: the default dispatcher (a goroutine per active mailbox,
// throughput 300) and the default unbounded mailbox. Its logger is silenced.
type protoRunner struct {
	timeout time.Duration
	garbage bool // ping-pong actors allocate what Troupe's paper-style closures do (protoactor_garbage.go)
}

func newProto() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

// pPonger waits for its pinger's PID, then answers every ping with a pong.
type pPonger struct{ peer *actor.PID }

func (p *pPonger) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case pPeer:
		p.peer = m.pid
	case pPing:
		ctx.Send(p.peer, pPong{})
	}
}

// pPinger: on pStart it introduces itself to its ponger, sends inflight
// pings and answers every pong with a ping until st.stop; then it reports
// and ignores the rest.
type pPinger struct {
	pong     *actor.PID
	pair     int
	inflight int
	st       *pairState
	n        int64
	done     bool
}

func (p *pPinger) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case pStart:
		ctx.Send(p.pong, pPeer{ctx.Self()})
		for range p.inflight {
			ctx.Send(p.pong, pPing{})
		}
	case pPong:
		if p.done {
			return
		}
		p.n++
		if p.st.stop.Load() {
			p.done = true
			p.st.report(p.pair, p.n)
			return
		}
		ctx.Send(p.pong, pPing{})
	}
}

// pingPong spawns every actor from the root context; Proto.Actor has no
// notion of colocation, so colocated is ignored.
func (r protoRunner) pingPong(pairs, inflight int, d time.Duration, _ bool) (float64, error) {
	sys := newProto()
	defer sys.Shutdown()
	st := newPairState(pairs)
	pingers := make([]*actor.PID, pairs)
	for i := range pairs {
		pong := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return r.ponger() }))
		pingers[i] = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return r.pinger(pPinger{pong: pong, pair: i, inflight: inflight, st: st})
		}))
	}
	return st.measure(func() {
		for _, p := range pingers {
			sys.Root.Send(p, pStart{})
		}
	}, d, r.timeout)
}

// pRingMember waits for its successor, then forwards the token until its
// last hop.
type pRingMember struct {
	next *actor.PID
	st   *ringState
}

func (m *pRingMember) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case pNext:
		m.next = msg.pid
		m.st.ready.countDown()
	case pToken:
		if msg.left == 0 {
			m.st.finish()
			return
		}
		ctx.Send(m.next, pToken{msg.left - 1})
	}
}

func (r protoRunner) ring(n, hops int) (float64, error) {
	sys := newProto()
	defer sys.Shutdown()
	st := newRingState(n)
	props := actor.PropsFromProducer(func() actor.Actor { return &pRingMember{st: st} })
	pids := make([]*actor.PID, n)
	for i := range pids {
		pids[i] = sys.Root.Spawn(props)
	}
	for i, pid := range pids {
		sys.Root.Send(pid, pNext{pids[(i+1)%n]})
	}
	return st.run(func() { sys.Root.Send(pids[0], pToken{hops}) }, hops, r.timeout)
}

// pIdle counts itself started on Started and then just waits.
type pIdle struct{ started *latch }

func (p *pIdle) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Started); ok {
		p.started.countDown()
	}
}

func (r protoRunner) spawn(n int, untilStarted bool) (float64, error) {
	sys := newProto()
	defer sys.Shutdown()
	started := newLatch(n)
	props := actor.PropsFromProducer(func() actor.Actor { return &pIdle{started} })
	t0 := time.Now()
	for range n {
		sys.Root.Spawn(props)
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

func (r protoRunner) idleMemory(n int) (float64, error) {
	sys := newProto()
	defer sys.Shutdown()
	started := newLatch(n)
	props := actor.PropsFromProducer(func() actor.Actor { return &pIdle{started} })
	goroutines := runtime.NumGoroutine()
	before := memInUse()
	for i := range n {
		if _, err := sys.Root.SpawnNamed(props, "a"+strconv.Itoa(i)); err != nil {
			return 0, fmt.Errorf("spawn a%d: %w", i, err)
		}
	}
	if err := started.wait("idle actors", r.timeout); err != nil {
		return 0, err
	}
	settle(goroutines)
	v := perActor(before, n)
	runtime.KeepAlive(sys)
	return v, nil
}
