package main

import (
	"github.com/troupe-mesh/troupe/actor"
)

// The same actors written with a reused case: the handler re-installs the
// case value it belongs to instead of building a new closure per message
// (the idiom actor's documentation gives for hot actors). Behavior and
// message flow are identical to tPonger, tPinger and tRingMember.

func tPongerReuse(c *actor.Context) {
	c.Receive(actor.On(func(p tPeer) {
		var h actor.Case
		h = actor.On(func(tPing) { c.Send(p.ref, tPong{}); c.Receive(h) })
		c.Receive(h)
	}))
}

func tPingerReuse(pong actor.Ref, pair, inflight int, st *pairState) actor.Behavior {
	return func(c *actor.Context) {
		c.Receive(actor.On(func(tStart) {
			c.Send(pong, tPeer{c.Self()})
			for range inflight {
				c.Send(pong, tPing{})
			}
			var n int64
			var h actor.Case
			h = actor.On(func(tPong) {
				n++
				if st.stop.Load() {
					st.report(pair, n)
					return
				}
				c.Send(pong, tPing{})
				c.Receive(h)
			})
			c.Receive(h)
		}))
	}
}

func tRingMemberReuse(st *ringState) actor.Behavior {
	return func(c *actor.Context) {
		c.Receive(actor.On(func(m tNext) {
			st.ready.countDown()
			var h actor.Case
			h = actor.On(func(t tToken) {
				if t.left == 0 {
					st.finish()
				} else {
					c.Send(m.ref, tToken{t.left - 1})
				}
				c.Receive(h)
			})
			c.Receive(h)
		}))
	}
}

// behaviors returns the pong, ping and ring-member behaviors of the
// runner's style.
func (r troupeRunner) ponger() actor.Behavior {
	if r.cases {
		return tPongerCases
	}
	if r.reuse {
		return tPongerReuse
	}
	return tPonger
}

func (r troupeRunner) pinger(pong actor.Ref, pair, inflight int, st *pairState) actor.Behavior {
	if r.cases {
		return tPingerCases(pong, pair, inflight, st)
	}
	if r.reuse {
		return tPingerReuse(pong, pair, inflight, st)
	}
	return tPinger(pong, pair, inflight, st)
}

func (r troupeRunner) ringMember(st *ringState) actor.Behavior {
	if r.reuse {
		return tRingMemberReuse(st)
	}
	return tRingMember(st)
}
