package integration

import (
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// logDialers logs, when TROUPE_SCALE_DIALERS=1, who is dialing at this
// moment: of every goroutine waiting in a swarm dial, the frame of the
// code that asked for it (dialCaller). A connection's first streams do
// not say who opened it: kad-dht checks every new DHT peer with a
// FIND_NODE over the new connection, whoever dialed it.
func logDialers(b *testing.B, label string) {
	if os.Getenv("TROUPE_SCALE_DIALERS") != "1" {
		return
	}
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	gs := map[string]string{} // goroutine id -> its dump
	for _, g := range strings.Split(string(buf), "\n\n") {
		if m := goroutineID.FindStringSubmatch(g); m != nil {
			gs[m[1]] = g
		}
	}
	counts := map[string]int{}
	for _, g := range gs {
		if strings.Contains(g, "swarm.(*Swarm).DialPeer") || strings.Contains(g, "swarm.(*Swarm).dialPeer") {
			counts[dialCaller(g, gs)]++
		}
	}
	b.Logf("dialers %s: %s", label, fmtCounts(counts))
}

var (
	goroutineID = regexp.MustCompile(`^goroutine (\d+) `)
	createdIn   = regexp.MustCompile(`\ncreated by .* in goroutine (\d+)\n`)
)

// dialCaller names who asked for the dial of goroutine dump g: the
// innermost Troupe frame (not this package's), else kad-dht's or
// GossipSub's outermost frame, followed up to the goroutines that created g (a kad-dht walk
// queries from goroutines of its own) while one of gs is alive: the
// creator's Troupe frame, or its outermost kad-dht frame, wins.
func dialCaller(g string, gs map[string]string) string {
	pick := ""
	for range 6 {
		funcs := frames(g)
		for _, f := range funcs {
			// The benchmark's own goroutine created the nodes'
			// libp2p services: a chain that ends there is theirs.
			if strings.Contains(f, "troupe-mesh/troupe") && !strings.Contains(f, "troupe/integration.") {
				return f
			}
		}
		for _, f := range funcs { // innermost first: the last one is the outermost
			if strings.Contains(f, "go-libp2p-kad-dht") || strings.Contains(f, "go-libp2p-pubsub") {
				pick = f
			}
		}
		m := createdIn.FindStringSubmatch(g)
		if m == nil || gs[m[1]] == "" {
			break
		}
		g = gs[m[1]]
	}
	if pick == "" {
		return "?"
	}
	return pick
}

// frames returns the functions of a goroutine dump, innermost first,
// its creator left out.
func frames(g string) []string {
	var funcs []string
	for i, l := range strings.Split(g, "\n") {
		if i == 0 || strings.HasPrefix(l, "\t") || l == "" || strings.HasPrefix(l, "created by ") {
			continue
		}
		if j := strings.LastIndex(l, "("); j > 0 {
			l = l[:j]
		}
		funcs = append(funcs, l)
	}
	return funcs
}
