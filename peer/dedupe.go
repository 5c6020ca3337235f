package peer

import (
	"cmp"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Duplicate connections. Two peers that dial each other at once (the
// DHT's rendezvous and mDNS make newcomers do that) hold two connections,
// one each way: in a 100-peer mesh some 1.4 connections per connected
// peer, so that a peer within its budget of 32 peers held 40 or more
// connections. The guard closes the extra ones: at each sweep, for each
// peer that holds two or more direct connections to this one, it keeps
// every connection that carries a stream and, when none does, the newest;
// it closes the others once they are Grace old (identify, the DHT and
// GossipSub have chosen where their streams go by then). The newest, not
// the oldest: libp2p's swarm opens a new stream on the connection with
// the most streams, and among equals on the newest (bestConnToPeer), so
// this end's next stream goes to the connection kept, never to the one
// being closed, and the other end's too as long as both ends list the
// two connections in the same order. Only the end
// with the lower peer ID closes, so that the two ends never close one
// connection each (the pair would be disconnected); the other end learns
// of it as any closed connection, which is not a disconnection while one
// is left (connectedness events are per peer). A relayed (limited)
// connection is left alone: the relay code and hole punching own those.
//
// It is off (config.dedupeConns, set by tests only): with it on,
// BenchmarkScale30's idle traffic rose from 1,033 to ~8,000 B/s per peer
// (docs/scale.md), cause not found.
//
// What is left: a stream the other end opens on the connection closed
// here in the moment of the close (before this end saw it) breaks. The
// DHT and GossipSub open another. A routing writer fails what it had in
// hand (its senders are told), but what it had written and flushed on
// that stream before the close is lost with no Down: a stream whose
// connection closed while another lives declares no loss (routing's
// lossAt, docs/routing.md "Limits"). The window is one round trip at a
// sweep, and only when the other end's swarm ranks the two idle
// connections the other way round (it lists them in another order).

// dupConn is one direct connection to a peer, as dupsToClose sees it.
type dupConn struct {
	opened  time.Time
	streams int // streams open on it
}

// dupsToClose returns the indexes of the connections of conns (all to one
// peer, all direct) to close: those that carry no stream and are at least
// grace old, but never all of them (the ones with streams are kept, or
// else the newest, the last of the newest when several are as new: the
// one libp2p's swarm, which lists connections as they were added, picks
// for a new stream).
func dupsToClose(conns []dupConn, now time.Time, grace time.Duration) []int {
	if len(conns) < 2 {
		return nil
	}
	keep := -1 // the connection kept when none carries a stream
	for i, c := range conns {
		if c.streams > 0 {
			keep = -2 // those are kept; no other need be
			break
		}
		if keep == -1 || !c.opened.Before(conns[keep].opened) {
			keep = i
		}
	}
	var out []int
	for i, c := range conns {
		if i != keep && c.streams == 0 && now.Sub(c.opened) >= grace {
			out = append(out, i)
		}
	}
	return out
}

// closesDups reports whether this end (self) closes the duplicate
// connections it holds to p: the end with the lower peer ID.
func closesDups(self, p libp2ppeer.ID) bool { return cmp.Less(self, p) }

// dedupe closes the duplicate connections dupsToClose picks among those
// of each connected peer this end closes for, and reports how many it
// closed. The guard's goroutine calls it after each sweep.
func (g *guard) dedupe(now time.Time) int {
	net := g.n.host.Network()
	self := g.n.host.ID()
	closed := 0
	for _, p := range net.Peers() {
		if !closesDups(self, p) {
			continue
		}
		all := net.ConnsToPeer(p)
		if len(all) < 2 {
			continue
		}
		direct := slices.DeleteFunc(slices.Clone(all), func(c network.Conn) bool {
			return c.Stat().Limited || isCircuit(c.RemoteMultiaddr())
		})
		facts := make([]dupConn, len(direct))
		for i, c := range direct {
			facts[i] = dupConn{opened: c.Stat().Opened, streams: len(c.GetStreams())}
		}
		for _, i := range dupsToClose(facts, now, g.grace) {
			if len(direct[i].GetStreams()) > 0 { // one opened since: kept
				continue
			}
			_ = direct[i].CloseWithError(network.ConnGarbageCollected)
			closed++
		}
	}
	g.dupsClosed.Add(int64(closed))
	return closed
}
