package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/troupe-mesh/troupe/peer"
)

// try is one askable try: when it started (since the askable start),
// how long each stage took, whether the asker was connected to the
// target before it asked, and how it ended ("" when it succeeded).
type try struct {
	at, whereis, ask time.Duration
	connected        bool
	kind             string
	// trace, for an ask that failed over a connection, what the two ends'
	// routers counted meanwhile (traceAsk); "" otherwise.
	trace string
	// target, when set, is the target's node (in this process): the
	// trace reads its router's counters too.
	target *peer.Node
}

// pairCounts is what one end's router counted of the other.
type pairCounts struct {
	sent, received uint64
	queued         int
	conns          int
}

func countsFor(nd *peer.Node, id libp2ppeer.ID) pairCounts {
	var c pairCounts
	for _, s := range nd.PeerStats() {
		if s.Peer == id {
			c = pairCounts{sent: s.Sent, received: s.Received, queued: s.Queued}
		}
	}
	c.conns = len(nd.Host().Network().ConnsToPeer(id))
	return c
}

// askTimed has from find svcName(to) and ask it a Ping, its stages
// timed into t.
func askTimed(ctx context.Context, from *peer.Node, to int, t *try) error {
	t0 := time.Now()
	ref, err := from.Whereis(ctx, svcName(to))
	t.whereis = time.Since(t0)
	if err != nil {
		return fmt.Errorf("whereis %s: %w", svcName(to), err)
	}
	pid, _ := libp2ppeer.Decode(ref.Peer())
	t.connected = from.Host().Network().Connectedness(pid) == network.Connected
	var a0, b0 pairCounts
	if t.target != nil {
		a0, b0 = countsFor(from, pid), countsFor(t.target, from.ID())
	}
	t1 := time.Now()
	v, err := from.System().Ask(ctx, ref, Ping{to})
	t.ask = time.Since(t1)
	if err != nil && t.target != nil {
		a1, b1 := countsFor(from, pid), countsFor(t.target, from.ID())
		t.trace = fmt.Sprintf("asker %+v -> %+v; target %+v -> %+v", a0, a1, b0, b1)
	}
	if err != nil {
		// Both: "connected" after the failure alone counted as asks over
		// a live connection the many whose connection came up during
		// the ask (docs/benchmarks.md).
		return fmt.Errorf("ask %s: %w (connected before=%v, after=%v)", svcName(to), err, t.connected,
			from.Host().Network().Connectedness(pid) == network.Connected)
	}
	if v != (Pong{to}) {
		return fmt.Errorf("ask %s: got %v", svcName(to), v)
	}
	return nil
}

// timeline writes the tries per 5 s of the askable phase: how many,
// how many succeeded, the median stage times, and the failures by kind
// (an ask's failure says whether it started connected): where the askable
// figure's time goes.
func timeline(name string, tries []try) {
	const step = 5 * time.Second
	if len(tries) == 0 {
		return
	}
	tries = slices.Clone(tries)
	slices.SortFunc(tries, func(a, b try) int { return int(a.at - b.at) })
	var sb strings.Builder
	for lo := time.Duration(0); ; lo += step {
		var in []try
		for _, t := range tries {
			if t.at >= lo && t.at < lo+step {
				in = append(in, t)
			}
		}
		if len(in) == 0 {
			if lo > tries[len(tries)-1].at {
				break
			}
			continue
		}
		ok, kinds := 0, map[string]int{}
		var wh, ask []time.Duration
		for _, t := range in {
			wh = append(wh, t.whereis)
			if t.kind == "" {
				ok++
				ask = append(ask, t.ask)
				continue
			}
			kinds[t.kind]++
		}
		slices.Sort(wh)
		slices.Sort(ask)
		fmt.Fprintf(&sb, "  %3.0f s: %3d tries, %3d ok, whereis p50 %v, ok ask p50 %v max %v; failed: %v\n",
			lo.Seconds(), len(in), ok, quantile(wh, 0.5).Round(time.Millisecond),
			quantile(ask, 0.5).Round(time.Millisecond), quantile(ask, 1).Round(time.Millisecond), kinds)
	}
	fmt.Fprintf(os.Stderr, "%s: askable tries by start time:\n%s", name, sb.String())
}
