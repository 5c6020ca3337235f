package peer

import (
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// allowlist is a connection gater that admits only listed peers. It checks
// at dial time and after the security handshake, when the remote peer ID is
// proven. It is immutable after construction.
type allowlist map[libp2ppeer.ID]struct{}

var _ connmgr.ConnectionGater = allowlist(nil)

func (a allowlist) ok(p libp2ppeer.ID) bool { _, ok := a[p]; return ok }

func (a allowlist) InterceptPeerDial(p libp2ppeer.ID) bool                 { return a.ok(p) }
func (a allowlist) InterceptAddrDial(p libp2ppeer.ID, _ ma.Multiaddr) bool { return a.ok(p) }
func (a allowlist) InterceptAccept(network.ConnMultiaddrs) bool            { return true }
func (a allowlist) InterceptSecured(_ network.Direction, p libp2ppeer.ID, _ network.ConnMultiaddrs) bool {
	return a.ok(p)
}
func (a allowlist) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
