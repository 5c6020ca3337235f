package peer

import (
	"cmp"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Trimming. libp2p's connection manager keeps Low unprotected
// connections besides the protected ones: with GossipSub protecting up
// to 12 mesh peers per topic, a peer of a 100-peer mesh kept some 60
// connections (BenchmarkScale100). The guard trims instead, to Low peers
// in all, the protected ones included: it disconnects the unprotected
// peers past their grace period, those of least value (the connection
// manager's tags: the DHT's routing table, GossipSub's deliveries) first,
// until Low are left or none is left to trim. The connection manager
// keeps the tags and the protections; its own trims are off (connmgr.go).
//
// A peer that no actor message went to or came from since it connected
// (quiet) is most likely one a DHT walk dialed, or one that dialed this
// peer for a walk: those were 70–79 % of the connections opened in a
// 100-peer mesh after the start (docs/scale.md). It may go after
// quietGrace instead of the grace period, and before the others. The
// walks' and provides' exchanges last round trips; GossipSub grafts a
// peer it wants at its next heartbeats (1 s apart), and a graft protects
// it.

// trimCandidate is a connected peer as a trim sees it.
type trimCandidate struct {
	id        libp2ppeer.ID
	protected bool      // under any tag
	firstSeen time.Time // of its connections (the zero time: unknown, spared)
	value     int       // the sum of its tags' values
	quiet     bool      // no actor message either way since it connected
}

// quietGrace is how long a quiet peer is left alone: a third of the
// grace period (10 s by default), several GossipSub heartbeats and a
// DHT walk's round trips on a busy machine.
func quietGrace(grace time.Duration) time.Duration { return grace / 3 }

// toTrim returns the peers to disconnect so that at most low of cands
// stay: unprotected ones whose first connection is at least grace old
// (quietGrace for a quiet one), the quiet first, then least value first
// (then by ID, for a stable order). Fewer, or none, when too few may go.
func toTrim(cands []trimCandidate, low int, now time.Time, grace time.Duration) []libp2ppeer.ID {
	excess := len(cands) - low
	if excess <= 0 {
		return nil
	}
	var may []trimCandidate
	for _, c := range cands {
		wait := grace
		if c.quiet {
			wait = quietGrace(grace)
		}
		if !c.protected && !c.firstSeen.IsZero() && now.Sub(c.firstSeen) >= wait {
			may = append(may, c)
		}
	}
	slices.SortFunc(may, func(a, b trimCandidate) int {
		return cmp.Or(-cmpBool(a.quiet, b.quiet), cmp.Compare(a.value, b.value), cmp.Compare(a.id, b.id))
	})
	out := make([]libp2ppeer.ID, 0, min(excess, len(may)))
	for _, c := range may[:min(excess, len(may))] {
		out = append(out, c.id)
	}
	return out
}

// trim disconnects what toTrim picks among the connected peers, each
// checked again right before (check), and reports how many it
// disconnected. The guard's goroutine calls it, just after a sweep.
func (g *guard) trim(now time.Time) int {
	h := g.n.host
	peers := h.Network().Peers()
	cands := make([]trimCandidate, 0, len(peers))
	for _, p := range peers {
		// The sweep just before marked every connected peer.
		c := trimCandidate{id: p, protected: g.cm.IsProtected(p, ""), quiet: g.marks[p].active.IsZero()}
		if ti := g.cm.GetTagInfo(p); ti != nil {
			c.firstSeen, c.value = ti.FirstSeen, ti.Value
		}
		cands = append(cands, c)
	}
	ids := toTrim(cands, g.n.cfg.conns.Low, now, g.grace)
	if f := g.beforeClose.Load(); f != nil {
		(*f)(ids)
	}
	trimmed := 0
	for _, id := range ids {
		// Checked again right before the close: a message queued, a
		// monitor or an Ask made since the sweep (a whole sweep ago for
		// the first peers) keeps the connection. What comes between this
		// check and the close is the window left (docs/scale.md).
		if g.check(id, time.Now()) != 0 || g.cm.IsProtected(id, "") {
			continue
		}
		for _, c := range h.Network().ConnsToPeer(id) {
			_ = c.CloseWithError(network.ConnGarbageCollected)
		}
		trimmed++
	}
	return trimmed
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}
