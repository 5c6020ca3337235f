package actor

import (
	"context"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// What the system hands its transport and takes from it. The exported
// names are package transport's (actor/transport): Envelope and Outbound
// are these instantiations of spi's types, and transport's Remote,
// BatchRemote, DirectRemote and GroupTransport have the method sets of the
// interfaces below, so that a transport's values are these without a
// conversion or a wrapper on the path of a message.

type envelope = spi.Envelope[Ref]

type outbound = spi.Outbound[Ref]

// remoteTransport is transport.Remote.
type remoteTransport interface {
	Deliver(to, from Ref, msg any, corr uint64, reply bool) error
}

// directRemote is transport.DirectRemote.
type directRemote interface {
	remoteTransport
	DeliverDirect(ctx context.Context, to, from Ref, msg any, corr uint64, reply bool) error
}

// batchRemote is transport.BatchRemote.
type batchRemote interface {
	remoteTransport
	DeliverBatch(from Ref, msgs []outbound) (int, error)
}

// groupTransport is transport.GroupTransport.
type groupTransport interface {
	JoinGroup(group string) error
	LeaveGroup(group string)
	PublishGroup(group string, from Ref, msg any) error
	AnnounceGroup(group string, member Ref, joined bool)
}
