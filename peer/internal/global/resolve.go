package global

import (
	"bytes"
	"crypto/sha256"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// The resolution of mesh-wide names: a pure function of the signed claims
// a peer holds, so that every peer that holds the same claims computes
// the same winner, and the two sides of a healed partition agree once
// their directories do.
//
// The winner of a name is the claim whose peer ID is nearest to the name's
// key in Kademlia's XOR metric (SHA-256 of the peer ID against SHA-256
// of "/troupe/global/<name>"). Why not the first claim: a claim's time
// or epoch is what its peer says it is, and a peer that lies about it
// would win every name; the peer ID is bound to the key that signs the
// claim. Why the distance and not plain ID order: the order would give
// every conflict to the same peer, and an ID made to sort first (cheap
// to grind: a few leading zero bits) would win all names; the distance
// differs from name to name, so grinding an ID wins one name at a cost
// that doubles with each bit of closeness. Claims are stable in practice
// because an honest peer does not claim a name it sees held (Claim
// fails with ErrNameTaken): the distance decides only between claims
// made without knowledge of each other.

// globalClaim is a claim as the resolution sees it: the name, the peer
// that signed it and its actor there.
type globalClaim struct {
	Name  string
	Peer  libp2ppeer.ID
	Actor string
}

// globalKey is the key a name's claims are measured against.
func globalKey(name string) [32]byte { return sha256.Sum256([]byte("/troupe/global/" + name)) }

// globalDistance is the XOR distance of peer to key.
func globalDistance(key [32]byte, p libp2ppeer.ID) [32]byte {
	h := sha256.Sum256([]byte(p))
	for i := range h {
		h[i] ^= key[i]
	}
	return h
}

// globalWinner returns the winning claim of name among claims (those of
// other names are ignored) and whether there is one. Two claims of one
// peer (only a buggy or hostile peer makes them) resolve to the smaller
// actor name.
func globalWinner(name string, claims []globalClaim) (globalClaim, bool) {
	key := globalKey(name)
	var (
		best  globalClaim
		bestD [32]byte
		found bool
	)
	for _, c := range claims {
		if c.Name != name {
			continue
		}
		d := globalDistance(key, c.Peer)
		cmp := bytes.Compare(d[:], bestD[:])
		if !found || cmp < 0 || (cmp == 0 && c.Actor < best.Actor) {
			best, bestD, found = c, d, true
		}
	}
	return best, found
}
