package peer

import (
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/routing"
)

// CheckMesh reports whether mesh is a valid mesh name: 1–32 characters
// of a-z, 0-9 and '-', starting with a letter or digit.
func CheckMesh(mesh string) error { return discovery.CheckMesh(mesh) }

// MDNSService is the mDNS service under which the peers of mesh announce
// themselves on the LAN.
func MDNSService(mesh string) string { return discovery.ServiceName(mesh) }

// EvtPeerRestarted is emitted on the host's event bus when a connected
// peer turned out to be a new start of the same identity (see
// routing.EvtPeerRestarted): monitors of its former actors have fired.
type EvtPeerRestarted = routing.EvtPeerRestarted
