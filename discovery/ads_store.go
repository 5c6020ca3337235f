package discovery

import (
	"bytes"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// What a Directory holds: the advertisements it verified, their expiry,
// the bounds on what one peer may make it keep, and the lookups.

// holds returns the advertisement held for id if its signed bytes are
// data, nil otherwise.
func (d *Directory) holds(id libp2ppeer.ID, data []byte) *Advertisement {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.peers[id]; ok && bytes.Equal(e.raw, data) {
		return e.ad
	}
	return nil
}

// fresh reports whether ad, which via sent, would replace what we hold
// (see store) and be wanted (wantedLocked), so that a signature is
// checked only when it matters.
func (d *Directory) fresh(id libp2ppeer.ID, ad *Advertisement, via libp2ppeer.ID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.wantedLocked(id, via) {
		return false
	}
	old, ok := d.peers[id]
	if ok && via == id && old.ad.Incarnation != ad.Incarnation {
		return true // its peer's own, of its current incarnation (see keep)
	}
	return !ok || old.ad.Incarnation == ad.Incarnation && old.ad.Seq < ad.Seq
}

// ttl returns how long ad asks to be kept, at most maxAdTTL (or the node's
// own TTL, if longer).
func (d *Directory) ttl(ad *Advertisement) time.Duration {
	return min(time.Duration(ad.TTLSeconds)*time.Second, max(maxAdTTL, d.cfg.TTL))
}

// store keeps ad (signed as raw), which via sent us, as keep does, and
// when it is kept puts the addresses it carries into the peerstore for
// as long: a peer known only from its advertisement (gossiped, pulled,
// relayed) can be dialed at once, without waiting for the DHT or
// identify to name its addresses.
func (d *Directory) store(ad *Advertisement, raw []byte, ttl time.Duration, relayed bool, via libp2ppeer.ID) (stored, added bool) {
	stored, added, id, ttl := d.keep(ad, raw, ttl, relayed, via)
	if stored {
		d.learnAddrs(id, ad, ttl)
	}
	return stored, added
}

// learnAddrs adds the addresses ad's peer signed (at most MaxAdAddrs,
// the unparsable skipped) to the peerstore for ttl. The addresses are
// only the peer's claim: a dial to them authenticates the peer, so an
// address that is not its own costs a failed dial, nothing else.
func (d *Directory) learnAddrs(id libp2ppeer.ID, ad *Advertisement, ttl time.Duration) {
	addrs := make([]ma.Multiaddr, 0, min(len(ad.Addrs), MaxAdAddrs))
	for _, s := range ad.Addrs[:min(len(ad.Addrs), MaxAdAddrs)] {
		if a, err := ma.NewMultiaddr(s); err == nil {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) > 0 {
		d.h.Peerstore().AddAddrs(id, addrs, ttl)
	}
}

// keep keeps ad (signed as raw), which via sent us, for ttl (at most
// d.ttl(ad)) unless we hold a newer one. An
// advertisement relayed in a directory exchange may be older than one of
// another incarnation we hold (the peer restarted): it replaces only an
// older one of its own incarnation; one its own peer answered (via is
// that peer) is first-hand, as gossip's, and replaces another
// incarnation's (a narrow directory, off the topic, learns a restarted
// neighbour's new one only so). One that came second-hand (via is
// not its peer) is bounded per relaying peer (see ads_relayed.go). It
// reports whether ad was stored, whether it is of a peer we held nothing
// of, its peer and the TTL it is kept for.
func (d *Directory) keep(ad *Advertisement, raw []byte, ttl time.Duration, relayed bool, via libp2ppeer.ID) (stored, added bool, id libp2ppeer.ID, kept time.Duration) {
	id, err := libp2ppeer.IDFromBytes(ad.Peer)
	if err != nil || id == d.h.ID() || ttl <= 0 {
		return false, false, id, 0
	}
	ttl = min(ttl, d.ttl(ad))
	if via == id || via == "" {
		relayed = relayed && via != id // its own peer's answer is first-hand
		via = ""                       // first-hand (or a caller that does not know)
	} else {
		ttl = min(ttl, d.cfg.TTL)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.peers[id]
	switch {
	case !d.wantedLocked(id, via):
		return false, false, id, 0 // a narrow directory's: not of a connected peer, or second-hand
	case !ok && via != "" && !d.relayRoomLocked(via):
		d.relayRefused.Add(1)
		return false, false, id, 0
	case !ok && (len(d.peers) >= maxDirectory || d.bytes+len(raw) > maxDirectoryBytes) &&
		!d.evictForLocked(id, len(raw)) && (via == "" || !d.evictRelayedLocked(via, len(raw))):
		if via != "" {
			d.relayRefused.Add(1)
		}
		return false, false, id, 0
	case ok && d.bytes-len(old.raw)+len(raw) > maxDirectoryBytes:
		return false, false, id, 0
	case ok && old.ad.Incarnation == ad.Incarnation && old.ad.Seq >= ad.Seq:
		return false, false, id, 0
	case ok && old.ad.Incarnation != ad.Incarnation && relayed:
		return false, false, id, 0
	case relayed && d.departedLocked(id, ad):
		return false, false, id, 0 // a departed peer's advertisement, still held elsewhere
	}
	d.bytes += len(raw) - len(old.raw)
	switch {
	case !ok:
		d.chargeLocked(id, via)
	case old.via != "" && via == "": // now first-hand
		d.unchargeLocked(id, old.via)
	default:
		via = old.via // still charged to whoever relayed it first
	}
	d.peers[id] = adEntry{ad: ad, raw: raw, expires: time.Now().Add(ttl), via: via}
	if !ok { // a peer new to us, by any path: others may know more, pull often again
		select {
		case d.pullNow <- struct{}{}:
		default:
		}
	}
	if d.updated != nil {
		close(d.updated)
		d.updated = nil
	}
	return true, !ok, id, ttl
}

// Updated returns a channel that is closed when the next advertisement
// is stored (a new peer's, or a newer one of a peer held): read what is
// wanted after taking the channel, and wait on it if it is not there.
func (d *Directory) Updated() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.updated == nil {
		d.updated = make(chan struct{})
	}
	return d.updated
}

// goneEntry is when a peer disconnected and which of its advertisements
// was held then (0, 0: none).
type goneEntry struct {
	at       time.Time
	inc, seq uint64
}

// departedLocked reports whether ad, relayed, is of a peer that
// disconnected from this node within ad's TTL and has published nothing
// since as far as ad shows: a peer that left stops publishing, while one
// that is only no longer connected here (a connection closed, a limit)
// goes on, and its next advertisement, newer than the one held when it
// disconnected (or of a new incarnation), is taken from any peer.
func (d *Directory) departedLocked(id libp2ppeer.ID, ad *Advertisement) bool {
	g, ok := d.gone[id]
	if !ok || time.Since(g.at) >= d.ttl(ad) {
		return false
	}
	if g.inc == 0 {
		return true // nothing held then to compare with
	}
	return ad.Incarnation == g.inc && ad.Seq <= g.seq
}

// evictForLocked makes room in a full directory for the advertisement (of
// size bytes) of id when id is a peer this node is connected to, by
// dropping advertisements of peers it is not connected to: a flood of
// advertisements of made-up peers cannot keep out the peers next to this
// node. It reports whether there is room. (Only for a connected peer: the
// scan is paid once per connection, not once per message of a flood.)
func (d *Directory) evictForLocked(id libp2ppeer.ID, size int) bool {
	net := d.h.Network()
	if net.Connectedness(id) != network.Connected {
		return false
	}
	for other := range d.peers {
		if len(d.peers) < maxDirectory && d.bytes+size <= maxDirectoryBytes {
			break
		}
		if net.Connectedness(other) != network.Connected {
			d.dropLocked(other)
		}
	}
	return len(d.peers) < maxDirectory && d.bytes+size <= maxDirectoryBytes
}

// dropLocked forgets the advertisement of id.
func (d *Directory) dropLocked(id libp2ppeer.ID) {
	if e, ok := d.peers[id]; ok {
		d.bytes -= len(e.raw)
		d.unchargeLocked(id, e.via)
		delete(d.peers, id)
	}
}

// expire drops advertisements whose TTL lapsed or whose peer disconnected
// and departed (adsConfig.Departed).
func (d *Directory) expire(events event.Subscription) {
	defer d.wg.Done()
	defer events.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case ev, ok := <-events.Out():
			if !ok {
				return
			}
			e := ev.(event.EvtPeerConnectednessChanged)
			// Asked before d.mu is taken: Departed may look at the
			// directory.
			left := e.Connectedness == network.NotConnected && (d.cfg.Departed == nil || d.cfg.Departed(e.Peer))
			d.mu.Lock()
			switch {
			case e.Connectedness == network.Connected:
				delete(d.gone, e.Peer)
			case left:
				g := goneEntry{at: time.Now()}
				if held, ok := d.peers[e.Peer]; ok {
					g.inc, g.seq = held.ad.Incarnation, held.ad.Seq
				}
				d.dropLocked(e.Peer)
				if len(d.gone) < maxDirectory {
					d.gone[e.Peer] = g
				}
			}
			d.mu.Unlock()
		case now := <-tick.C:
			d.mu.Lock()
			d.dropUnconnectedLocked()
			for id, e := range d.peers {
				switch {
				case now.After(e.expires):
					d.dropLocked(id)
					d.expired.Add(1)
				case !e.refreshing && e.expires.Sub(now) < d.ttl(e.ad)/3 &&
					d.h.Network().Connectedness(id) == network.Connected:
					// Republished every third of its TTL, it should have
					// been refreshed by now: gossip missed it; ask its origin.
					select {
					case d.syncq <- id:
						e.refreshing = true
						d.peers[id] = e
					default:
					}
				}
			}
			for id, g := range d.gone {
				if now.Sub(g.at) > d.cfg.TTL && now.Sub(g.at) > defaultTTL {
					delete(d.gone, id)
				}
			}
			d.mu.Unlock()
		}
	}
}

// Ad returns the advertisement held for peer id, or nil.
func (d *Directory) Ad(id libp2ppeer.ID) *Advertisement {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.peers[id]; ok {
		return e.ad
	}
	return nil
}

// Peers returns the live advertisements of the other peers, by peer ID.
func (d *Directory) Peers() []*Advertisement {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*Advertisement, 0, len(d.peers))
	for _, e := range d.peers {
		out = append(out, e.ad)
	}
	slices.SortFunc(out, func(a, b *Advertisement) int { return bytes.Compare(a.Peer, b.Peer) })
	return out
}

// Len returns how many other peers' advertisements the directory holds.
func (d *Directory) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.peers)
}

// Lookup returns the peers advertising an actor called name.
func (d *Directory) Lookup(name string) []libp2ppeer.ID {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []libp2ppeer.ID
	for id, e := range d.peers {
		if slices.Contains(e.ad.Actors, name) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Rejected returns how many advertisements (gossiped or relayed) and
// directory exchanges were rejected.
func (d *Directory) Rejected() uint64 { return d.rejected.Load() }

// DirectoryStats are a directory's counters.
type DirectoryStats struct {
	Rejected uint64 // bad advertisements and directory exchanges
	Synced   uint64 // advertisements stored from directory exchanges
	Busy     uint64 // directory exchanges skipped: too many at once
	Forced   uint64 // republications because the topic gained its first peer
	Gossiped uint64 // advertisements stored from the topic (new, or newer than held)
	Expired  uint64 // advertisements dropped because their TTL lapsed without news
	// RelayRefused counts second-hand advertisements refused: their
	// relaying peer had relayed maxRelayedPerPeer held here, or had more
	// than its share of a full directory.
	RelayRefused uint64
	// TopicLeft and TopicJoined count the times the directory left the
	// advertisement topic (the mesh judged large) and joined it again.
	TopicLeft, TopicJoined uint64
	// Narrowed counts the advertisements a narrow directory dropped
	// because their peer was no longer connected.
	Narrowed uint64
}

// Stats returns the directory's counters.
func (d *Directory) Stats() DirectoryStats {
	return DirectoryStats{Rejected: d.rejected.Load(), Synced: d.synced.Load(), Busy: d.syncBusy.Load(), Forced: d.forced.Load(),
		Gossiped: d.gossiped.Load(), Expired: d.expired.Load(), RelayRefused: d.relayRefused.Load(),
		TopicLeft: d.leaves.Load(), TopicJoined: d.joins.Load(), Narrowed: d.narrowed.Load()}
}
