package integration

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/peer"
)

// dirMedian returns the median of the advertisements the nodes hold.
func dirMedian(nodes []*peer.Node) int {
	counts := make([]int, len(nodes))
	for i, nd := range nodes {
		counts[i] = len(nd.Directory().Peers())
	}
	slices.Sort(counts)
	return counts[len(counts)/2]
}

// syncCapable returns how many of nd's connected peers its peerstore
// knows to speak the directory exchange (what its pulls choose from).
func syncCapable(nd *peer.Node) int {
	proto := discovery.SyncProtocol("scale")
	k := 0
	for _, p := range nd.Host().Network().Peers() {
		if ok, _ := nd.Host().Peerstore().SupportsProtocols(p, proto); len(ok) > 0 {
			k++
		}
	}
	return k
}

// connsPerPeer returns the median and the most of the nodes' open
// connections.
func connsPerPeer(nodes []*peer.Node) (median, most int) {
	counts := make([]int, len(nodes))
	for i, nd := range nodes {
		counts[i] = len(nd.Host().Network().Conns())
	}
	slices.Sort(counts)
	return counts[len(counts)/2], counts[len(counts)-1]
}

// peersPerPeer returns the median and the most of the nodes' connected
// peers.
func peersPerPeer(nodes []*peer.Node) (median, most int) {
	counts := make([]int, len(nodes))
	for i, nd := range nodes {
		counts[i] = len(nd.Host().Network().Peers())
	}
	slices.Sort(counts)
	return counts[len(counts)/2], counts[len(counts)-1]
}

// settling is how long waitPastGrace waited, and whether the newest
// connection was past the grace period by then.
type settling struct {
	wait time.Duration
	past bool
}

// waitPastGrace waits until every open connection of the nodes is at
// least grace old, or bound passed (new connections keep coming).
func waitPastGrace(nodes []*peer.Node, grace, bound time.Duration) settling {
	start := time.Now()
	for {
		var newest time.Time
		for _, nd := range nodes {
			for _, c := range nd.Host().Network().Conns() {
				if o := c.Stat().Opened; o.After(newest) {
					newest = o
				}
			}
		}
		wait := time.Until(newest.Add(grace))
		if wait <= 0 {
			return settling{wait: time.Since(start), past: true}
		}
		if time.Since(start)+wait > bound {
			time.Sleep(bound - time.Since(start))
			return settling{wait: time.Since(start)}
		}
		time.Sleep(wait)
	}
}

// protectedPerPeer returns the median of the nodes' connected peers that
// something protects from trimming (the node's guard, GossipSub's
// meshes, pinned peers...): what the connection budget cannot trim.
func protectedPerPeer(nodes []*peer.Node) int {
	counts := make([]int, len(nodes))
	for i, nd := range nodes {
		cm := nd.Host().ConnManager()
		for _, p := range nd.Host().Network().Peers() {
			if cm.IsProtected(p, "") {
				counts[i]++
			}
		}
	}
	slices.Sort(counts)
	return counts[len(counts)/2]
}

// lastDialFailure is the latest failed dial of a peer nd found (its
// bootstrap peer's among them), for a failure message: why a peer
// stayed alone.
func lastDialFailure(nd *peer.Node) string {
	f := nd.DialFailures()
	if len(f) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d failed dials, the last at %s: %s", len(f), f[0].At.Format("15:04:05.000"), f[0].Err)
}

// adsStored is how many advertisements the nodes' directories stored so
// far, from gossip and from exchanges (new ones and newer ones).
func adsStored(nodes []*peer.Node) uint64 {
	var n uint64
	for _, nd := range nodes {
		st := nd.Directory().Stats()
		n += st.Gossiped + st.Synced
	}
	return n
}

// idleWindow is how long the idle traffic is measured: 20 s, or
// TROUPE_SCALE_IDLE (a duration). Below the lookup threshold every
// advertisement is republished every 30 s, nearly in step for peers
// started together: a 20 s window may catch such a wave or not (main's
// Scale100 idle figures were 6.5–7.6 or 21–26 KB/s per peer).
func idleWindow() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("TROUPE_SCALE_IDLE")); err == nil && d > 0 {
		return d
	}
	return 20 * time.Second
}
