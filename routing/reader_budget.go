package routing

import (
	"cmp"
	"fmt"
	"sync"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// What all stream readers together may hold for frames and large
// messages that have not fully arrived (what streamBudget charges): the
// per-peer limits of the resource manager hold per identity, and
// identities are free. Past DefaultReaderMemory for the whole node, a
// reader may reserve more only while its peer holds less than one
// maximum frame and a frame buffer (readerFloor: so that no crowd locks
// an honest peer's one large message out): many identities hold at most
// the total plus that each. What is refused resets the stream, as a resource manager's
// refusal does.

// DefaultReaderMemory is the most bytes all inbound stream readers hold
// for unfinished frames and large messages, beyond each peer's floor
// (readerFloor).
const DefaultReaderMemory = 128 << 20

// readerFloor is what a peer's readers may hold whatever the node's
// total: one large message of the maximum frame and the buffer of the
// frame carrying its last fragment.
func readerFloor(maxFrame int) int64 { return int64(maxFrame) + 2*minReadFrame }

// errReaderMemory is the cause of a reservation the node-wide reader
// budget refused.
var errReaderMemory = fmt.Errorf("routing: the node's memory for unfinished frames and large messages is taken (%d bytes)", DefaultReaderMemory)

// readerBudget counts what the readers hold, node-wide and per peer.
// Safe for concurrent use.
type readerBudget struct {
	limit, floor int64
	mu           sync.Mutex
	held         int64                   // guarded by mu
	byPeer       map[libp2ppeer.ID]int64 // guarded by mu; no zero entries
}

// reserve counts n more bytes of p's, and reports false, having counted
// nothing, when the node is at its limit and p at its floor.
func (b *readerBudget) reserve(p libp2ppeer.ID, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine := b.byPeer[p]
	if b.held+n > cmp.Or(b.limit, DefaultReaderMemory) && mine+n > b.floor {
		return false
	}
	if b.byPeer == nil {
		b.byPeer = make(map[libp2ppeer.ID]int64)
	}
	b.held += n
	b.byPeer[p] = mine + n
	return true
}

// release gives back n bytes of p's.
func (b *readerBudget) release(p libp2ppeer.ID, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if left := b.byPeer[p] - n; left > 0 {
		b.byPeer[p] = left
	} else {
		delete(b.byPeer, p)
	}
}

// stat returns the bytes held and the peers holding some.
func (b *readerBudget) stat() (held int64, peers int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, len(b.byPeer)
}
