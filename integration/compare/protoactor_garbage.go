package main

import "github.com/asynkron/protoactor-go/actor"

// Proto.Actor's ping-pong actors made to allocate, per round trip, what
// Troupe's paper-style actors (tPongLoop, tPingLoop) allocate in their
// closures: 32 bytes on the ponger's side, 64 and 8 on the pinger's,
// each object with pointers as a closure has (104 bytes, 3 allocations,
// with Troupe's one-string Ref). The objects become garbage at once, as
// a used closure does. The row that runs them tells what the garbage
// collector costs both systems for those bytes, apart from the runtimes.

type (
	garbage32 struct {
		fn, ctx *int
		ref     [2]uintptr
	}
	garbage64 struct {
		fn, ctx, st, n *int
		rest           [4]uintptr
	}
)

// Each actor keeps its latest objects in its own fields, as an actor
// keeps the closure installed as its continuation: they escape, and the
// previous ones become garbage.
type pPongerGarbage struct {
	pPonger
	sink32 *garbage32
}

func (p *pPongerGarbage) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(pPing); ok {
		p.sink32 = &garbage32{}
	}
	p.pPonger.Receive(ctx)
}

type pPingerGarbage struct {
	pPinger
	sink64 *garbage64
	sink8  *int64
}

func (p *pPingerGarbage) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(pPong); ok {
		p.sink64, p.sink8 = &garbage64{}, new(int64)
	}
	p.pPinger.Receive(ctx)
}

// ponger and pinger return the ping-pong actors of the runner's kind.
func (r protoRunner) ponger() actor.Actor {
	if r.garbage {
		return &pPongerGarbage{}
	}
	return &pPonger{}
}

func (r protoRunner) pinger(p pPinger) actor.Actor {
	if r.garbage {
		return &pPingerGarbage{pPinger: p}
	}
	return &p
}
