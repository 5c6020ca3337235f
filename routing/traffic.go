package routing

import (
	"slices"
	"strings"
	"sync/atomic"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// peerCounts counts the messages written to and read from one peer's
// streams. Router.counts holds one per peer from its first message until
// it disconnects (peerGone), so the counters only grow while it stays.
type peerCounts struct{ sent, received atomic.Uint64 }

// countsOf returns id's counters, creating them if needed. A lookup
// without a lock (sync.Map), once per batch of messages. A peer no
// longer connected (a batch counted as it left, after peerGone) gets
// counters that are not kept.
func (r *Router) countsOf(id libp2ppeer.ID) *peerCounts {
	if c, ok := r.counts.Load(id); ok {
		return c.(*peerCounts)
	}
	if r.h != nil && len(r.h.Network().ConnsToPeer(id)) == 0 {
		return new(peerCounts)
	}
	c, _ := r.counts.LoadOrStore(id, new(peerCounts))
	return c.(*peerCounts)
}

// PeerStats is one peer's traffic, as PeerStats reports it.
type PeerStats struct {
	Peer     libp2ppeer.ID
	Sent     uint64 // messages written to its streams since it connected
	Received uint64 // messages read from its streams since it connected
	Queued   int    // messages waiting in the link's queues to be written
	Held     int64  // bytes of its messages local actors have not handled yet
}

// PeerStats returns the traffic of every peer exchanged with since it
// connected, sorted by peer ID. Counters of a peer that is no longer
// connected (a batch counted as it left) are dropped here.
func (r *Router) PeerStats() []PeerStats {
	var out []PeerStats
	c0 := map[libp2ppeer.ID]*peerCounts{}
	r.counts.Range(func(k, v any) bool {
		id, c := k.(libp2ppeer.ID), v.(*peerCounts)
		c0[id] = c
		out = append(out, PeerStats{Peer: id, Sent: c.sent.Load(), Received: c.received.Load()})
		return true
	})
	links := make([]*link, len(out))
	r.mu.Lock()
	for i := range out {
		links[i] = r.links[out[i].Peer.String()]
		if b := r.budgets[out[i].Peer]; b != nil {
			out[i].Held = b.credit.Held()
		}
	}
	r.mu.Unlock()
	for i, l := range links {
		if l != nil {
			out[i].Queued = l.user.q.len() + l.ctl.q.len()
		}
	}
	net := r.h.Network()
	out = slices.DeleteFunc(out, func(p PeerStats) bool {
		if len(net.ConnsToPeer(p.Peer)) > 0 {
			return false
		}
		r.counts.CompareAndDelete(p.Peer, c0[p.Peer])
		return true
	})
	slices.SortFunc(out, func(a, b PeerStats) int { return strings.Compare(string(a.Peer), string(b.Peer)) })
	return out
}
