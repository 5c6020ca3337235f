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
	if !r.connected(id) {
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
// connected, or with a link to it (messages queued before the first
// write count), sorted by peer ID. Counters of a peer that is no longer
// connected (a batch counted as it left) are dropped here.
func (r *Router) PeerStats() []PeerStats {
	byPeer := map[libp2ppeer.ID]*PeerStats{}
	at := func(id libp2ppeer.ID) *PeerStats {
		if s := byPeer[id]; s != nil {
			return s
		}
		s := &PeerStats{Peer: id}
		byPeer[id] = s
		return s
	}
	c0 := map[libp2ppeer.ID]*peerCounts{}
	r.counts.Range(func(k, v any) bool {
		id, c := k.(libp2ppeer.ID), v.(*peerCounts)
		c0[id] = c
		s := at(id)
		s.Sent, s.Received = c.sent.Load(), c.received.Load()
		return true
	})
	var links []*link
	r.mu.Lock()
	for _, l := range r.links {
		links = append(links, l)
		at(l.peer)
	}
	for id, s := range byPeer {
		if b := r.budgets[id]; b != nil {
			s.Held = b.credit.Held()
		}
	}
	r.mu.Unlock()
	for _, l := range links {
		at(l.peer).Queued = l.user.q.len() + l.ctl.q.len()
	}
	out := make([]PeerStats, 0, len(byPeer))
	for id, s := range byPeer {
		if s.Queued == 0 && !r.connected(id) {
			if c := c0[id]; c != nil {
				r.counts.CompareAndDelete(id, c)
			}
			continue
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b PeerStats) int { return strings.Compare(string(a.Peer), string(b.Peer)) })
	return out
}

// connected says whether the host has a connection to id (always, for a
// router without a host, as in unit tests).
func (r *Router) connected(id libp2ppeer.ID) bool {
	return r.h == nil || len(r.h.Network().ConnsToPeer(id)) > 0
}
