package routing

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// What all stream readers together may hold for frames and large
// messages that have not fully arrived (what streamBudget charges): the
// per-peer limits of the resource manager hold per identity, and
// identities are free. Three bounds apply on top of them, each counted
// when a reservation is made:
//   - bytes, node-wide: past DefaultReaderMemory, a reader may reserve
//     more only while its peer holds less than one maximum frame and a
//     frame buffer (readerFloor: so that no crowd locks an honest peer's
//     one large message out);
//   - bytes per source address: the readers of all the peers connected
//     from one IP address (an IPv6 /64) hold at most
//     DefaultReaderPerAddress, the floors included, so many identities
//     from few addresses share that (libp2p admits 8 connections per
//     IPv4 address by default). A relayed connection has no address of
//     its own here (only its relay's), and loopback is this machine:
//     neither is bounded per address;
//   - streams, node-wide: at most DefaultReaderStreams streams hold
//     reserved memory at once; past it, a peer none of whose streams
//     holds any may still start one (the count's floor).
//
// What is refused resets the stream, as a resource manager's refusal
// does, and is counted (Stats.ReaderRefused).

// DefaultReaderMemory is the most bytes all inbound stream readers hold
// for unfinished frames and large messages, beyond each peer's floor
// (readerFloor).
const DefaultReaderMemory = 128 << 20

// DefaultReaderPerAddress is the most bytes the inbound stream readers
// of all the peers connected from one source address hold, their floors
// included, unless two floors are more (readerPerAddress).
const DefaultReaderPerAddress = 32 << 20

// readerPerAddress is the per-address bound for a floor: the default, or
// two floors if more, so that a node whose maximum frame is raised past
// some 16 MiB still takes a maximum large message from every address
// (below the floor, the bound would refuse it from any peer).
func readerPerAddress(floor int64) int64 { return max(DefaultReaderPerAddress, 2*floor) }

// DefaultReaderStreams is the most inbound streams whose readers hold
// reserved memory (a frame beyond the first buffer, a large message
// being reassembled) at once, beyond one per peer.
const DefaultReaderStreams = 1024

// readerFloor is what a peer's readers may hold whatever the node's
// total: one large message of the maximum frame and the buffer of the
// frame carrying its last fragment.
func readerFloor(maxFrame int) int64 { return int64(maxFrame) + 2*minReadFrame }

// errReaderMemory is the cause of a reservation the node-wide reader
// budget refused.
var errReaderMemory = fmt.Errorf("routing: the node's memory for unfinished frames and large messages is taken (%d bytes)", DefaultReaderMemory)

// errReaderAddress is the cause of a reservation refused because the
// peers of one source address hold their share.
var errReaderAddress = errors.New("routing: the peers of this source address hold their share of the memory for unfinished frames and large messages")

// errReaderStreams is the cause of a reservation refused because too
// many streams hold reserved memory.
var errReaderStreams = errors.New("routing: too many streams hold unfinished frames or large messages")

// readerSource is whom a reservation is charged to: the peer, and the
// source address it is connected from ("": none bounded).
type readerSource struct {
	peer libp2ppeer.ID
	addr string
}

// readerHeld is what the readers of one peer, or of one address, hold.
type readerHeld struct {
	bytes   int64
	streams int // streams holding some bytes
}

// readerBudget counts what the readers hold, node-wide, per peer and
// per source address. Safe for concurrent use.
type readerBudget struct {
	limit, floor int64
	perAddr      int64                        // 0: DefaultReaderPerAddress
	maxStreams   int                          // 0: DefaultReaderStreams
	mu           sync.Mutex                   // a leaf: nothing is locked while it is held
	held         int64                        // guarded by mu
	streams      int                          // guarded by mu: streams holding some bytes
	refused      uint64                       // guarded by mu: reservations refused
	byPeer       map[libp2ppeer.ID]readerHeld // guarded by mu; no zero entries
	byAddr       map[string]readerHeld        // guarded by mu; no zero entries
}

// reserve counts n more bytes of src's for a stream that holds nothing
// yet when first, and returns the bound that refused them, having
// counted nothing: the node at its limit and the peer at its floor, the
// address at its share, or the node at its stream count while the peer
// already has a stream holding some.
func (b *readerBudget) reserve(src readerSource, n int64, first bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine := b.byPeer[src.peer]
	addr := b.byAddr[src.addr]
	var err error
	switch {
	case src.addr != "" && addr.bytes+n > cmp.Or(b.perAddr, DefaultReaderPerAddress):
		err = errReaderAddress
	case b.held+n > cmp.Or(b.limit, DefaultReaderMemory) && mine.bytes+n > b.floor:
		err = errReaderMemory
	case first && b.streams >= cmp.Or(b.maxStreams, DefaultReaderStreams) && mine.streams > 0:
		err = errReaderStreams
	}
	if err != nil {
		b.refused++
		return err
	}
	if b.byPeer == nil {
		b.byPeer = make(map[libp2ppeer.ID]readerHeld)
		b.byAddr = make(map[string]readerHeld)
	}
	streams := 0
	if first {
		streams = 1
	}
	b.held += n
	b.streams += streams
	b.byPeer[src.peer] = readerHeld{mine.bytes + n, mine.streams + streams}
	if src.addr != "" {
		b.byAddr[src.addr] = readerHeld{addr.bytes + n, addr.streams + streams}
	}
	return nil
}

// release gives back n bytes of src's, from a stream that holds nothing
// more when last.
func (b *readerBudget) release(src readerSource, n int64, last bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	streams := 0
	if last {
		streams = 1
	}
	b.held -= n
	b.streams -= streams
	drop := func(h readerHeld) (readerHeld, bool) {
		h.bytes -= n
		h.streams -= streams
		return h, h.bytes > 0 || h.streams > 0
	}
	if h, keep := drop(b.byPeer[src.peer]); keep {
		b.byPeer[src.peer] = h
	} else {
		delete(b.byPeer, src.peer)
	}
	if src.addr == "" {
		return
	}
	if h, keep := drop(b.byAddr[src.addr]); keep {
		b.byAddr[src.addr] = h
	} else {
		delete(b.byAddr, src.addr)
	}
}

// readerStat is the state of the readers' budget.
type readerStat struct {
	held         int64
	peers, addrs int
	streams      int
	refused      uint64
}

// stat returns the budget's state.
func (b *readerBudget) stat() readerStat {
	b.mu.Lock()
	defer b.mu.Unlock()
	return readerStat{held: b.held, peers: len(b.byPeer), addrs: len(b.byAddr), streams: b.streams, refused: b.refused}
}

// sourceAddr returns the key of the source address of a connection from
// remote for the per-address bound: the IPv4 address, or the /64 of an
// IPv6 one; "" for a relayed connection, a loopback address (unless
// loopback, for tests) or an address without IP.
func sourceAddr(remote ma.Multiaddr, loopback bool) string {
	if remote == nil {
		return ""
	}
	var ip netip.Addr
	relayed := false
	for _, c := range remote {
		switch c.Protocol().Code {
		case ma.P_CIRCUIT:
			relayed = true
		case ma.P_IP4, ma.P_IP6:
			if !ip.IsValid() {
				ip, _ = netip.AddrFromSlice(c.RawValue())
			}
		}
	}
	switch {
	case relayed || !ip.IsValid() || ip.IsLoopback() && !loopback:
		return ""
	case ip.Is4() || ip.Is4In6():
		return ip.Unmap().String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}
