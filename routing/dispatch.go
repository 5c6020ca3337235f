package routing

import (
	"fmt"
	"log/slog"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// What a decoded message becomes: its Refs (cached: a stream's messages
// mostly repeat them), the signal policy for other peers (admit), the
// router's own messages, and the refusal of types unknown here.

// admit reports whether the signal msg may go to its actor: a monitor or
// link needs a sender (nothing would ever remove one from no actor), no
// peer may kill (the actor's own checks refuse it too: an exit from
// another peer goes along a link only, see actor.AcceptRemoteLinks), and
// a protected actor takes no exit signal or link from other peers.
func (in *inbound) admit(env *codec.Envelope, msg any) bool {
	r := in.r
	switch msg.(type) {
	case transport.MonitorSignal, transport.DemonitorSignal, transport.LinkSignal, transport.UnlinkSignal, transport.ExitSignal:
		if env.FromName == "" {
			r.decodeErrors.Add(1)
			r.logPeer(slog.LevelDebug, in.remote, "routing: monitor, link or exit from no actor", "type", env.Type)
			return false
		}
	}
	switch m := msg.(type) {
	case transport.ExitSignal:
		if m.Kill || r.protected[env.To] {
			r.refused.Add(1)
			r.logPeer(slog.LevelDebug, in.remote, "routing: exit refused", "to", env.To, "kill", m.Kill)
			return false
		}
	case transport.LinkSignal:
		if r.protected[env.To] {
			r.refused.Add(1)
			r.logPeer(slog.LevelDebug, in.remote, "routing: link refused for a protected actor", "to", env.To)
			return false
		}
	}
	return true
}

// refCache remembers the last target and sender of a stream: consecutive
// frames mostly repeat them, and building a Ref validates its name.
type refCache struct {
	to, from cachedRef
}

// cachedRef is a Ref with the strings it was built from, compared
// without splitting the Ref again.
type cachedRef struct {
	ref        actor.Ref
	peer, name string
}

// get returns the Ref of name on peer, from c when it is the last one.
func (c *cachedRef) get(peer, name string) (actor.Ref, error) {
	if name != "" && sameString(c.name, name) && sameString(c.peer, peer) {
		return c.ref, nil
	}
	ref, err := actor.NewRef(peer, name)
	if err == nil {
		*c = cachedRef{ref: ref, peer: peer, name: name}
	}
	return ref, err
}

// envRefs returns the Refs of env's target, on this peer, and of its
// sender, on the stream's peer: "<peer>/$" (AnonymousSender) when the
// message came from no actor there, so that an actor never takes another
// peer's message for one of its own peer's plain code (whose sender is
// the zero Ref). ok is false, and the frame counted as a decode error,
// when a name is not valid.
func (in *inbound) envRefs(env *codec.Envelope) (to, from actor.Ref, ok bool) {
	r := in.r
	to, err := in.refs.to.get(r.sys.Peer(), env.To)
	if err == nil {
		name := env.FromName
		if name == "" {
			name = AnonymousSender
		}
		from, err = in.refs.from.get(in.remoteStr, name)
	}
	if err != nil {
		r.decodeErrors.Add(1)
		return actor.Ref{}, actor.Ref{}, false
	}
	return to, from, true
}

// AnonymousSender is the name of the sender of another peer's messages
// from no actor (from plain Go code there): a name no actor has (generated
// names are '$' and a number). The group service (routing/groups) names
// the sender of such group messages the same.
const AnonymousSender = "$"

// forRouter handles msg, a system message, if it is the router's own (a
// hello, a loss's declaration or the request for one, a pause notice), after what came
// before it, and reports whether it was.
func (in *inbound) forRouter(msg any) bool {
	r := in.r
	switch b := msg.(type) {
	case helloBody:
		in.flush()
		if !in.helloed { // one per stream: a peer cannot flood restarts
			in.helloed = true
			if in.self != nil && !in.supersede(b) {
				in.stale = true
				return true
			}
			in.inc = b.Incarnation
			r.hello(in.remote, b.Incarnation, in.conn)
			if !in.ctl {
				r.awaitLoss(in.remote, in.conn, b.Lost)
			}
		}
	case lostBody, resetBody:
		if !in.ctl { // on a control stream only
			r.decodeErrors.Add(1)
			return true
		}
		in.flush()
		if l, ok := b.(lostBody); ok {
			r.lossHeard(in.remote, l.Session, in.inc)
		} else {
			r.asked(in.remote)
		}
		if r.hooks.lossMessage != nil {
			r.hooks.lossMessage()
		}
	case pauseBody:
		if !in.ctl { // on a control stream only
			r.decodeErrors.Add(1)
			return true
		}
		r.pauseHeard(in.remote, in.peer, b)
	default:
		return false
	}
	return true
}

// dispatch queues the message of env, whose body decoded to v, for its
// actor; a hello is handled at once, after what came before it.
func (in *inbound) dispatch(env *codec.Envelope, v any) {
	r := in.r
	msg, reply, err := fromValue(env, v)
	if err != nil {
		r.decodeErrors.Add(1)
		r.logPeer(slog.LevelDebug, in.remote, "routing: undecodable message", "type", env.Type, "err", err)
		return
	}
	if env.Kind == codec.KindSystem && in.forRouter(msg) {
		return
	}
	if env.Kind != codec.KindUser && !in.admit(env, msg) { // a user message is never a signal (fromValue)
		return
	}
	to, from, ok := in.envRefs(env)
	if !ok {
		return
	}
	if raw, ok := msg.(codec.Raw); ok && env.Kind == codec.KindUser && !r.sys.AcceptsUnknownTypes(to) {
		in.unknownType(to, from, raw, env.Corr)
		return
	}
	in.out.Add(&transport.Envelope{To: to, From: from, Msg: msg, Corr: env.Corr, Reply: reply, Size: in.size + nodeCost})
}

// unknownType makes a user message of a type this node does not know,
// for an actor that does not take such messages, a dead letter (an Ask
// fails at once): it would sit unmatched in a typed actor's mailbox.
func (in *inbound) unknownType(to, from actor.Ref, raw codec.Raw, corr uint64) {
	r := in.r
	raw.Body = nil                                       // not kept by a dead-letter hook
	if _, ok := r.sys.System().Whereis(to.Name()); !ok { // what the sender most needs to know
		r.sys.Bounce(transport.Envelope{To: to, From: from, Msg: raw, Corr: corr}, actor.ErrNoSuchActor)
		return
	}
	r.unknownTypes.Add(1)
	r.logPeer(slog.LevelDebug, in.remote, "routing: message of an unknown type", "to", to.Name(), "type", raw.Type)
	r.sys.Bounce(transport.Envelope{To: to, From: from, Msg: raw, Corr: corr}, fmt.Errorf("%w: %q", actor.ErrUnknownType, raw.Type))
}
