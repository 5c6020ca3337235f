package peer

import (
	"context"
	"fmt"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/routing"
	"github.com/troupe-mesh/troupe/routing/groups"
)

// SendCtx sends msg to `to` from plain Go code, waiting for space in the
// link's queue until ctx ends (backpressure) instead of dropping. It
// returns once the message is queued; a message the link would refuse
// (larger than the maximum frame: routing.ErrTooLarge; or one the codec
// cannot encode) is refused with that error instead. On an event loop it
// never waits: where it would, it returns actor.ErrBlockingCall (inside an
// actor, Context.Send turns a full link into a dead letter). A context
// already done, or a node closing, sends nothing: the error is ctx's, or
// matches actor.ErrClosed.
func (n *Node) SendCtx(ctx context.Context, to actor.Ref, msg any) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case n.closing.Load():
		return fmt.Errorf("peer: send to %v: %w", to, routing.ErrClosed)
	case to.Peer() == n.sys.Peer():
		n.sys.Send(to, msg)
		return nil
	}
	return n.router.DeliverCtx(ctx, transport.Envelope{To: to, Msg: msg})
}

// Publish sends msg to every member of the group name on every peer
// (WithGroups).
func (n *Node) Publish(name string, msg any) error {
	return group.Publish(n.sys, name, actor.Ref{}, msg)
}

// Groups returns the group transport, nil without WithGroups.
func (n *Node) Groups() *groups.Groups { return n.groups }

// GroupReady waits until at least peers other peers share group, so that
// a message published now reaches their members (GossipSub drops what is
// published before its mesh forms), or ctx ends. Without WithGroups it
// returns at once.
func (n *Node) GroupReady(ctx context.Context, group string, peers int) error {
	if n.sys.InEventLoop() {
		return actor.ErrBlockingCall
	}
	if n.groups == nil {
		return nil
	}
	return n.groups.WaitReady(ctx, group, peers)
}
