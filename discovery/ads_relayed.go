package discovery

import libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

// What a peer may make the directory hold of other peers: advertisements
// are signed by the peer they describe, but identities are free, so a
// peer can relay (in directory exchanges, or by forwarding gossip) the
// advertisements of peers it made up, which may claim any actor name.
// An entry learned second-hand is charged to the peer that relayed it:
// each relaying peer holds at most maxRelayedPerPeer entries, and in a
// full directory a newcomer's relay takes the place of one of the
// relaying peer that holds the most, while that one holds more. Such an
// entry is kept at most the node's own TTL (WithAdTTL) without news. It
// never displaces an entry its own peer sent (first-hand), which a
// connected peer's always gets room for (evictForLocked); a first-hand
// copy of an entry clears its charge.

// maxRelayedPerPeer is the most second-hand entries charged to one
// relaying peer: one directory exchange's worth.
const maxRelayedPerPeer = MaxSyncAds

// relayRoomLocked reports whether via may relay one more new entry.
func (d *Directory) relayRoomLocked(via libp2ppeer.ID) bool {
	return len(d.relayed[via]) < maxRelayedPerPeer
}

// chargeLocked charges the entry of id to via ("" : first-hand, nobody).
func (d *Directory) chargeLocked(id, via libp2ppeer.ID) {
	if via == "" {
		return
	}
	if d.relayed == nil {
		d.relayed = make(map[libp2ppeer.ID]map[libp2ppeer.ID]struct{})
	}
	m := d.relayed[via]
	if m == nil {
		m = make(map[libp2ppeer.ID]struct{})
		d.relayed[via] = m
	}
	m[id] = struct{}{}
}

// unchargeLocked takes the entry of id off via's charge.
func (d *Directory) unchargeLocked(id, via libp2ppeer.ID) {
	if m := d.relayed[via]; m != nil {
		delete(m, id)
		if len(m) == 0 {
			delete(d.relayed, via)
		}
	}
}

// evictRelayedLocked makes room in a full directory for a new entry (of
// size bytes) that via relays, by dropping second-hand entries of the
// relaying peer that holds the most, while it holds at least two more
// than via would. It reports whether there is room.
func (d *Directory) evictRelayedLocked(via libp2ppeer.ID, size int) bool {
	room := func() bool { return len(d.peers) < maxDirectory && d.bytes+size <= maxDirectoryBytes }
	for !room() {
		var top libp2ppeer.ID
		for r, m := range d.relayed {
			if len(m) > len(d.relayed[top]) {
				top = r
			}
		}
		if top == "" || top == via || len(d.relayed[top]) < len(d.relayed[via])+2 {
			return false
		}
		for id := range d.relayed[top] {
			d.dropLocked(id)
			break
		}
	}
	return true
}
