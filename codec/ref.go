package codec

import (
	"encoding/hex"

	"github.com/fxamacker/cbor/v2"
)

// Ref is the wire form of an actor reference: the peer ID bytes of the peer
// hosting the actor and the actor's name on that peer. It encodes as a CBOR
// array [peer bytes, name text], the same layout as an envelope's from
// field, so it can appear in message bodies. codec does not depend on
// libp2p or actor, and routing does not convert between Ref and
// actor.Ref: an application that puts a Ref in a body converts it.
type Ref struct {
	_ struct{} `cbor:",toarray"`
	// Peer is the hosting peer's ID bytes; empty means the local peer.
	Peer []byte
	// Name is the actor's name on that peer.
	Name string
}

// String returns "name@hex(peer)", or just the name for a local Ref.
func (r Ref) String() string {
	if len(r.Peer) == 0 {
		return r.Name
	}
	return r.Name + "@" + hex.EncodeToString(r.Peer)
}

// Raw is a message of a type the local registry does not know: its
// registered name and its CBOR body, untouched. Registry.Decode returns a
// Raw for unknown type names, and Registry.Encode passes a Raw through, so
// peers running different code and the CLI can still exchange messages.
type Raw struct {
	// Type is the registered name of the message type on the sender.
	Type string
	// Body is the message's CBOR encoding: exactly one data item.
	Body cbor.RawMessage
}
