package discovery

import (
	"context"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Which advertisements a directory holds. In a small mesh, every peer's:
// the directory is on the mesh's advertisement topic and pulls from
// random peers. Above the lookup threshold (adsConfig.Large, the DHT's
// judgement with its hysteresis) the directory is narrow: it leaves the
// topic (gossip would bring N advertisements every TTL/3), publishes
// nothing on it, and holds only the advertisements of the peers it is
// connected to, each from that peer itself (the directory exchange on
// every connection dialed, the origin asked again before its
// advertisement expires, a pull of a connected peer whose advertisement
// is missing); other names are found by lookup. Below three quarters of
// the threshold it joins the topic again.

// scopeTick is how often the directory asks whether the mesh is large.
const scopeTick = time.Second

// judge asks whether the mesh is large now and records the answer in
// d.narrow. Called by collect only (the owner of the topic membership).
func (d *Directory) judge() bool {
	large := d.cfg.Large != nil && d.cfg.Large()
	d.narrow.Store(large)
	return large
}

// Narrow reports whether the directory judged the mesh large at its last
// look (every second): it is off the advertisement topic and holds only
// the advertisements of connected peers. Safe for concurrent use.
func (d *Directory) Narrow() bool { return d.narrow.Load() }

// collect owns the directory's subscription to the advertisement topic:
// subscribed (sub, from StartAds, at first) while the mesh is small,
// unsubscribed while it is large.
func (d *Directory) collect(sub *pubsub.Subscription) {
	defer d.wg.Done()
	tick := time.NewTicker(scopeTick)
	defer tick.Stop()
	for {
		if sub == nil && !d.judge() {
			var err error
			if sub, err = d.topic.Subscribe(); err != nil {
				d.cfg.Logger.Debug("discovery: joining the advertisement topic", "err", err)
				sub = nil
			} else {
				d.joins.Add(1)
				d.force.Store(true) // what we published while away reached nobody
				d.Changed()
				select { // and pull the mesh's directory at once, not at the backoff's pace
				case d.pullNow <- struct{}{}:
				default:
				}
			}
		}
		if sub != nil {
			d.readTopic(sub)
			sub.Cancel()
			sub = nil
			if d.ctx.Err() != nil {
				return
			}
			d.leaves.Add(1)
		}
		select {
		case <-d.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// readTopic stores what sub delivers until the directory closes or the
// mesh is judged large.
func (d *Directory) readTopic(sub *pubsub.Subscription) {
	ctx, cancel := context.WithCancel(d.ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		tick := time.NewTicker(scopeTick)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if d.judge() {
					cancel()
					return
				}
			}
		}
	})
	for {
		m, err := sub.Next(ctx)
		if err != nil {
			return
		}
		if ad, ok := m.ValidatorData.(*Advertisement); ok {
			if ok, _ := d.store(ad, m.Data, d.ttl(ad), false, m.ReceivedFrom); ok {
				d.gossiped.Add(1)
			}
		}
	}
}

// wantedLocked reports whether a narrow directory would keep an
// advertisement of id that via sent: only from id itself, connected.
// A wide one keeps any (as keep decides).
func (d *Directory) wantedLocked(id, via libp2ppeer.ID) bool {
	if !d.narrow.Load() {
		return true
	}
	return (via == "" || via == id) && d.h.Network().Connectedness(id) == network.Connected
}

// dropUnconnectedLocked drops, in a narrow directory, the advertisements
// of the peers it is no longer connected to.
func (d *Directory) dropUnconnectedLocked() {
	if !d.narrow.Load() {
		return
	}
	net := d.h.Network()
	for id := range d.peers {
		if net.Connectedness(id) != network.Connected {
			d.dropLocked(id)
			d.narrowed.Add(1)
		}
	}
}

// missingPeer returns, of candidates (connected peers that speak the
// exchange), one whose advertisement the directory lacks, if any.
func (d *Directory) missingPeer(candidates []libp2ppeer.ID) (libp2ppeer.ID, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range candidates {
		if _, ok := d.peers[p]; !ok {
			return p, true
		}
	}
	return "", false
}
