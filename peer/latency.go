package peer

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// The round trip to each connected peer, which 'troupe peers' and the
// mesh view show, comes from the peerstore's latency record. libp2p fills
// it only when something pings, so the node pings each peer once soon
// after it connects and every latencyEvery after (a 32-byte ping each
// way; over a relayed connection too, within the relay's data limit).

const (
	latencyTick     = time.Second      // how often the prober looks for peers to ping
	latencyEvery    = 30 * time.Second // how often each peer is pinged
	latencyTimeout  = 5 * time.Second  // a ping unanswered by then is given up
	latencyParallel = 8                // pings at once
)

// latencyProber pings peers to keep their round trips known. Its
// goroutine owns the record of when each peer was last pinged.
type latencyProber struct {
	stop context.CancelFunc
	done chan struct{}
}

// startLatencyProber starts pinging h's peers until stop.
func startLatencyProber(h host.Host) *latencyProber {
	ctx, cancel := context.WithCancel(context.Background())
	p := &latencyProber{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		last := map[libp2ppeer.ID]time.Time{}
		tick := time.NewTicker(latencyTick)
		defer tick.Stop()
		for {
			pingAll(ctx, h, duePeers(h.Network().Peers(), last, time.Now()))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// close stops the prober and waits for it.
func (p *latencyProber) close() {
	p.stop()
	<-p.done
}

// duePeers returns the peers of connected not pinged within latencyEvery
// before now, marking them pinged now, and forgets the peers in last that
// are no longer connected.
func duePeers(connected []libp2ppeer.ID, last map[libp2ppeer.ID]time.Time, now time.Time) []libp2ppeer.ID {
	live := make(map[libp2ppeer.ID]bool, len(connected))
	var due []libp2ppeer.ID
	for _, id := range connected {
		live[id] = true
		if at, ok := last[id]; !ok || now.Sub(at) >= latencyEvery {
			last[id] = now
			due = append(due, id)
		}
	}
	for id := range last {
		if !live[id] {
			delete(last, id)
		}
	}
	return due
}

// pingAll pings each of ids once (libp2p records the round trip), at most
// latencyParallel at once, and returns when all answered or gave up.
func pingAll(ctx context.Context, h host.Host, ids []libp2ppeer.ID) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, latencyParallel)
	for _, id := range ids {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			pctx, cancel := context.WithTimeout(ctx, latencyTimeout)
			defer cancel()
			<-ping.Ping(pctx, h, id) // the first result; cancel ends the pings
		}()
	}
	wg.Wait()
}
