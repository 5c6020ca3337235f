package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/peer"
)

// connCensus records, for every connection the nodes open, who opened it
// and the protocols of the streams first seen on it, so that a scale
// benchmark can say where the connections an idle mesh holds come from.
type connCensus struct {
	wg   sync.WaitGroup // the watchers of new connections
	done chan struct{}  // closed by stop

	mu      sync.Mutex
	first   map[network.Conn]string // protocols seen on the connection's first streams
	stopped bool                    // no watcher starts once set
}

// newConnCensus returns a census whose watchers end when tb's test does.
func newConnCensus(tb testing.TB) *connCensus {
	cc := &connCensus{first: map[network.Conn]string{}, done: make(chan struct{})}
	tb.Cleanup(cc.stop)
	return cc
}

// stop ends the watchers and waits for them.
func (cc *connCensus) stop() {
	cc.mu.Lock()
	if !cc.stopped {
		cc.stopped = true
		close(cc.done)
	}
	cc.mu.Unlock()
	cc.wg.Wait()
}

// watch records the connections nd opens or accepts from now on.
func (cc *connCensus) watch(nd *peer.Node) {
	nd.Host().Network().Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if cc.stopped {
			return
		}
		cc.wg.Go(func() {
			// The first streams: identify runs on every connection; what
			// else the opener wanted shows within a few hundred ms. A DHT
			// query's stream lasts a round trip: looked for every 5 ms
			// at first, or a connection a query opened counts as
			// identify's alone.
			var seen []string
			waits := []time.Duration{200 * time.Millisecond, time.Second}
			for range 40 {
				waits = append([]time.Duration{5 * time.Millisecond}, waits...)
			}
			for _, d := range waits {
				select {
				case <-time.After(d):
				case <-cc.done:
					return
				}
				for _, s := range c.GetStreams() {
					p := string(s.Protocol())
					if p != "" && !strings.Contains(p, "/id/") && !slices.Contains(seen, p) {
						seen = append(seen, p)
					}
				}
				if len(seen) > 0 {
					break
				}
			}
			cc.mu.Lock()
			cc.first[c] = strings.Join(seen, ",")
			cc.mu.Unlock()
		})
	}})
}

// report logs what the nodes' open connections are: by direction, age
// (opened since `since`), the first protocol outbound ones carried, the
// peer pairs holding two, and which tags protect the connected peers.
func (cc *connCensus) report(b *testing.B, nodes []*peer.Node, since time.Time, topics []string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var in, out, late, dup, total int
	lateProto := map[string]int{}
	outProto := map[string]int{}
	prot := map[string]int{}
	var peersPer []int
	// Unprotected connected peers by the age of their oldest connection:
	// inside the quiet grace (10 s), inside the grace (30 s), past it.
	ages := map[string]int{}
	for _, nd := range nodes {
		for _, p := range nd.Host().Network().Peers() {
			if nd.Host().ConnManager().IsProtected(p, "") {
				continue
			}
			var oldest time.Time
			for _, c := range nd.Host().Network().ConnsToPeer(p) {
				if o := c.Stat().Opened; oldest.IsZero() || o.Before(oldest) {
					oldest = o
				}
			}
			switch age := time.Since(oldest); {
			case age < peer.DefaultConnsGrace/3:
				ages["<10s"]++
			case age < peer.DefaultConnsGrace:
				ages["10-30s"]++
			default:
				ages[">30s"]++
			}
		}
	}
	for _, nd := range nodes {
		net := nd.Host().Network()
		cm := nd.Host().ConnManager()
		peersPer = append(peersPer, len(net.Peers()))
		for _, p := range net.Peers() {
			cs := net.ConnsToPeer(p)
			if len(cs) > 1 {
				dup++
			}
			any := false
			for _, tag := range append([]string{"troupe-busy", "troupe", "kbucket"}, topics...) {
				if cm.IsProtected(p, tag) {
					prot[tag]++
					any = true
				}
			}
			if any || cm.IsProtected(p, "") {
				prot["any"]++
			}
		}
		for _, c := range net.Conns() {
			total++
			st := c.Stat()
			proto := cc.first[c]
			if proto == "" {
				proto = "-"
			}
			if st.Direction == network.DirInbound {
				in++
				continue
			}
			out++
			outProto[proto]++
			if st.Opened.After(since) {
				late++
				lateProto[proto]++
			}
		}
	}
	slices.Sort(peersPer)
	b.Logf("census: %d conns (%d in, %d out), peers per node median %d max %d, %d peer pairs with two or more",
		total, in, out, peersPer[len(peersPer)/2], peersPer[len(peersPer)-1], dup)
	b.Logf("census: outbound by first protocol: %s", fmtCounts(outProto))
	b.Logf("census: %d outbound opened after %s: %s", late, since.Format("15:04:05.000"), fmtCounts(lateProto))
	b.Logf("census: protected peers by tag (sum over nodes): %s", fmtCounts(prot))
	b.Logf("census: unprotected peers by connection age (sum over nodes): %s", fmtCounts(ages))
}

func fmtCounts(m map[string]int) string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&sb, "%s=%d ", k, m[k])
	}
	return sb.String()
}

// connsOf describes a's connections for a failure message: the peer (its
// index in nodes, -1 if not one of them), how many protocols a knows it
// has, the connection's age and the protocols of its open streams.
func connsOf(a *peer.Node, nodes []*peer.Node) string {
	index := map[libp2ppeer.ID]int{}
	for i, nd := range nodes {
		index[nd.Host().ID()] = i
	}
	var out []string
	for _, c := range a.Host().Network().Conns() {
		p := c.RemotePeer()
		i, ok := index[p]
		if !ok {
			i = -1
		}
		protos, _ := a.Host().Peerstore().GetProtocols(p)
		var streams []string
		for _, s := range c.GetStreams() {
			streams = append(streams, string(s.Protocol()))
		}
		out = append(out, fmt.Sprintf("node %d (%s, %d protocols known, up %v, streams %v)",
			i, c.Stat().Direction, len(protos), time.Since(c.Stat().Opened).Round(time.Second), streams))
	}
	return strings.Join(out, "; ")
}
