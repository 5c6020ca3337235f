package main

import (
	"github.com/troupe-mesh/troupe/actor"
)

// The pairs in the idiom of actor.Cases: each state of an actor is a set
// of cases built once, which its handlers install again; state lives in
// the actor's own variables, per-message data comes from the handler's
// argument. Behavior and message flow are those of tPonger and tPinger.

// tPongerCases waits for its pinger's Ref, then answers every ping.
func tPongerCases(c *actor.Context) {
	var peer actor.Ref
	var serving actor.Case
	serving = actor.Cases(actor.On(func(tPing) { c.Send(peer, tPong{}); c.Receive(serving) }))
	c.Receive(actor.Cases(actor.On(func(p tPeer) { peer = p.ref; c.Receive(serving) })))
}

// tPingerCases is tPinger with its two states built once.
func tPingerCases(pong actor.Ref, pair, inflight int, st *pairState) actor.Behavior {
	return func(c *actor.Context) {
		var n int64
		var playing actor.Case
		playing = actor.Cases(actor.On(func(tPong) {
			n++
			if st.stop.Load() {
				st.report(pair, n)
				return // the pinger stops; later pongs are dead letters
			}
			c.Send(pong, tPing{})
			c.Receive(playing)
		}))
		c.Receive(actor.Cases(actor.On(func(tStart) {
			c.Send(pong, tPeer{c.Self()})
			for range inflight {
				c.Send(pong, tPing{})
			}
			c.Receive(playing)
		})))
	}
}
