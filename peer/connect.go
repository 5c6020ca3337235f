package peer

import (
	"context"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
)

// Connections: peers the application connects to (pinned for good) and
// peers discovery found (kept while busy: protect.go).

// ErrRefused reports a connection that the remote peer closed right after
// the handshake: its allowlist does not hold this peer. It is
// discovery.ErrRefused, so discovery does not dial such a peer again.
var ErrRefused = discovery.ErrRefused

// pinTag is the tag under which a node protects the connections of the
// peers the application connected to from the connection manager's
// trimming, for good.
const pinTag = "troupe"

// Connect connects to a peer and remembers it for good: its addresses
// stay in the peerstore (so that links to its actors can dial it again
// whenever it is back) and its connections are protected from the
// connection manager's trimming. Peers that discovery finds are not
// pinned so: they are protected while busy (protect.go), and their addresses
// last as long as libp2p keeps them (15 minutes after a disconnect) or
// until discovery finds them again, so that peers that left cost nothing
// for good.
//
// A remote allowlist lets the handshake complete and then closes the
// connection, which libp2p reports as a success; Connect returns
// ErrRefused instead when no connection to the peer survived it. (libp2p's
// Connect returns only once the peer's identify exchange has ended, which
// fails on a closed connection, so the check does not race with the
// remote's refusal.) Like every call of Node that waits, it returns
// actor.ErrBlockingCall on an event loop.
func (n *Node) Connect(ctx context.Context, ai libp2ppeer.AddrInfo) error {
	if err := n.connect(ctx, ai); err != nil {
		return err
	}
	// Only a peer that let us in is remembered: failed dials leave
	// nothing behind.
	n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.PermanentAddrTTL)
	n.host.ConnManager().Protect(ai.ID, pinTag)
	return nil
}

// connectFound is Connect for discovery: the peer's addresses are not
// pinned, nor its connections protected (protect.go keeps them while they
// are busy). Once the node is connected to Connections.Low peers it
// dials none but its bootstrap peers (the DHT's way in): discovery still
// learns them, and a message to one of them dials it.
func (n *Node) connectFound(ctx context.Context, ai libp2ppeer.AddrInfo) error {
	boot := slices.ContainsFunc(n.cfg.bootstrap, func(b libp2ppeer.AddrInfo) bool { return b.ID == ai.ID })
	if !boot && n.dialBudgetFull() {
		return fmt.Errorf("peer: connect %v: %w", ai.ID, ErrDialBudget)
	}
	if err := n.connect(ctx, ai); err != nil {
		if ctx.Err() == nil && !n.closing.Load() {
			n.dialFails.failed(ai, err)
		}
		return err
	}
	n.dialFails.connected(ai.ID)
	return nil
}

// connect dials ai and checks that the connection survived the remote's
// gater.
func (n *Node) connect(ctx context.Context, ai libp2ppeer.AddrInfo) error {
	if n.sys.InEventLoop() {
		return actor.ErrBlockingCall
	}
	if err := n.host.Connect(ctx, ai); err != nil { // keeps ai.Addrs for a few minutes
		return fmt.Errorf("peer: connect %v: %w", ai.ID, err)
	}
	if !slices.ContainsFunc(n.host.Network().ConnsToPeer(ai.ID), func(c network.Conn) bool { return !c.IsClosed() }) {
		return fmt.Errorf("peer: connect %v: %w", ai.ID, ErrRefused)
	}
	return nil
}
