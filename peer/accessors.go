package peer

import (
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/routing"
)

// ID returns the node's peer ID.
func (n *Node) ID() libp2ppeer.ID { return n.host.ID() }

// Addrs returns the node's listen addresses, each with its /p2p/ suffix.
func (n *Node) Addrs() []ma.Multiaddr {
	addrs, err := libp2ppeer.AddrInfoToP2pAddrs(n.AddrInfo())
	if err != nil {
		return nil
	}
	return addrs
}

// AddrInfo returns the node's ID and listen addresses, for Connect.
func (n *Node) AddrInfo() *libp2ppeer.AddrInfo {
	return &libp2ppeer.AddrInfo{ID: n.host.ID(), Addrs: n.host.Addrs()}
}

// Host returns the libp2p host. The node owns it: closing it, or setting
// a handler for a /troupe/ protocol on it, breaks the node.
func (n *Node) Host() host.Host { return n.host }

// System returns the node's actor system.
func (n *Node) System() *actor.System { return n.sys }

// Router returns the node's router, for its statistics and links. The
// node owns it: Close and the Deliver methods are the node's to
// call (messages go through System or SendCtx).
func (n *Node) Router() *routing.Router { return n.router }

// Stats returns the router's counters: messages sent and received, dead
// letters of full links, streams reset for bad input, and so on.
func (n *Node) Stats() routing.Stats { return n.router.Stats() }

// PeerStats returns, per connected peer exchanged with, the messages
// written to and read from it since it connected, what waits to be
// written and the bytes of its messages this node's actors hold.
func (n *Node) PeerStats() []routing.PeerStats { return n.router.PeerStats() }

// Ref returns the Ref of the actor called name on peer id.
func Ref(id libp2ppeer.ID, name string) (actor.Ref, error) { return actor.NewRef(id.String(), name) }
