package discovery

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Staying joined to the DHT: a peer whose bootstrap peers were unreachable
// when it started (the bootstrap was busy with a hundred handshakes, or
// the laptop was offline) dials them again until it is joined, and again
// whenever it loses every peer of its routing table.

const (
	bootstrapDial     = 10 * time.Second // one dial of a bootstrap peer
	bootstrapRetryMin = time.Second      // the first retry; it doubles...
	bootstrapRetryMax = 30 * time.Second // ...up to this, jittered
	joinedCheck       = 2 * time.Second  // how often a joined peer checks it still is
)

// unidentifiedAfter is how old a connection to a bootstrap peer must be,
// with nothing known of the peer's protocols, to count as one whose
// identify failed (libp2p's identify gives up after 5 s); a variable for
// tests.
var unidentifiedAfter = 10 * time.Second

// unidentified reports whether this peer is connected to p only by
// connections older than unidentifiedAfter while it knows none of p's
// protocols: identify failed on them (it timed out at a bootstrap busy
// with a hundred handshakes), nothing runs it again, and kad-dht never
// puts p in the routing table, so the peer stayed alone, connected.
func (d *DHT) unidentified(p libp2ppeer.ID) bool {
	conns := d.h.Network().ConnsToPeer(p)
	for _, c := range conns {
		if time.Since(c.Stat().Opened) < unidentifiedAfter {
			return false
		}
	}
	protos, err := d.h.Peerstore().GetProtocols(p)
	return len(conns) > 0 && err == nil && len(protos) == 0
}

// joined reports whether this peer is connected to a peer of its routing
// table (kad-dht keeps a peer in the table for a while after it left).
func (d *DHT) joined() bool {
	for _, p := range d.kad.RoutingTable().ListPeers() {
		if d.h.Network().Connectedness(p) == network.Connected {
			return true
		}
	}
	return false
}

// join dials, all at once, the bootstrap peers this peer is not connected
// to (or only by connections identify failed on, which it closes first),
// and reports whether it is connected to one of them now. A failure
// is logged as a warning when warn is set (the first attempt), at debug
// level otherwise (a laptop offline would fill its log).
func (d *DHT) join(warn bool) bool {
	var wg sync.WaitGroup
	for _, b := range d.cfg.Bootstrap {
		if b.ID == d.h.ID() {
			continue
		}
		if d.h.Network().Connectedness(b.ID) == network.Connected {
			if !d.unidentified(b.ID) {
				continue
			}
			// A new connection identifies again.
			d.cfg.Logger.Debug("discovery: bootstrap peer never identified; reconnecting", "peer", b.ID)
			_ = d.h.Network().ClosePeer(b.ID)
		}
		wg.Add(1)
		go func(b libp2ppeer.AddrInfo) {
			defer wg.Done()
			// Past libp2p's dial backoff (5 s and more per failure): these
			// retries are the backoff.
			ctx, cancel := context.WithTimeout(network.WithForceDirectDial(d.ctx, "bootstrap"), bootstrapDial)
			defer cancel()
			d.bootDials.Add(1)
			err := d.cfg.Connect(ctx, b)
			switch {
			case err == nil || d.ctx.Err() != nil:
			case warn:
				d.cfg.Logger.Warn("discovery: bootstrap peer unreachable; retrying", "peer", b.ID, "err", err)
			default:
				d.cfg.Logger.Debug("discovery: bootstrap peer unreachable", "peer", b.ID, "err", err)
			}
		}(b)
	}
	wg.Wait()
	for _, b := range d.cfg.Bootstrap {
		if d.h.Network().Connectedness(b.ID) == network.Connected && !d.unidentified(b.ID) {
			return true
		}
	}
	return false
}

// keepJoined joins through the bootstrap peers and stays joined: while
// it is not (no peer of its routing table connected), it dials the
// bootstrap peers, again after 1 s, 2 s, 4 s... up to 30 s, jittered so
// that the peers a busy bootstrap refused do not come back together.
// Each time it joins, it refreshes the routing table and wakes the
// rendezvous's advertising.
func (d *DHT) keepJoined() {
	defer d.wg.Done()
	if len(d.cfg.Bootstrap) == 0 {
		return // a first peer, or one that mDNS joins
	}
	retry := bootstrapRetryMin
	first, wasJoined := true, false
	for {
		var wait time.Duration
		switch {
		case d.joined():
			wait, retry = joinedCheck, bootstrapRetryMin
			if !wasJoined {
				wasJoined = true
				d.refresh()
			}
		case d.join(first):
			wait, retry, wasJoined = joinedCheck, bootstrapRetryMin, true
			d.refresh()
		default:
			wasJoined = false
			wait = retry/2 + rand.N(retry)
			retry = min(2*retry, bootstrapRetryMax)
		}
		first = false
		if !d.sleep(wait) {
			return
		}
	}
}

// refresh fills the routing table from the peers joined and tells the
// rendezvous's advertising to try now.
func (d *DHT) refresh() {
	_ = d.kad.Bootstrap(d.ctx)
	select {
	case d.joinedNow <- struct{}{}:
	default:
	}
}
