// Package discovery finds other Troupe peers without configuration.
//
// # LAN
//
// StartMDNS announces the host over multicast DNS under a service name
// derived from the mesh name, so that two meshes on one LAN stay apart, and
// connects to every peer it hears of (its own announcements are ignored)
// while the node's dial budget lets it (ErrDialBudget).
// Announcements arrive repeatedly and concurrently; they are handed to a
// bounded queue and two worker goroutines, so a burst of them costs no
// goroutine per announcement, and a peer is dialed at most once per 5 s
// for its announcements. A dial that fails is tried again up to four
// times, after random delays that double (0.5–1.5 s at first), past the
// swarm's dial backoff: peers that hear of each other together dial each
// other together, which over TCP with a shared port can be a simultaneous
// open that fails both dials, and the service may not announce again for
// a long time.
//
// The mDNS service joins its multicast groups on the interfaces that are up
// when it starts, so StartMDNS restarts it when the usable interfaces change
// (looked at every 2 s: a laptop's Wi-Fi coming up later) or the host's
// addresses do (EvtLocalAddressesUpdated), at most once a second; with no
// multicast interface at all it waits for one instead of failing, and a
// start that failed on an interface not yet ready is tried again at the
// next look. It also restarts the service, which queries the LAN again,
// when a peer it connected to within the last 15 minutes (at most 256
// remembered) is not connected: 10 s after it is found missing, then
// twice as long each time (at most 5 minutes apart) while some stay
// missing, and every 10 s again once none is (nextRequery), so that the
// peers of a healed partition find each other.
//
// mDNS needs an interface with the MULTICAST flag and a non-loopback listen
// address. Tests run it only inside network namespaces they create: on a
// CI machine the default interface leads off the machine.
//
// # Beyond the LAN
//
// StartDHT joins Troupe's Kademlia DHT (/troupe/kad/1.0.0, under
// DHTProtocolPrefix: it never meets the public IPFS DHT) through
// bootstrap peers and meets
// the mesh's other peers at a rendezvous key, dialing those it finds in
// random order while the node wants peers (WithWantsPeers, ErrDialBudget).
//
// # Advertisements
//
// StartAds publishes this peer's signed advertisement (its public actors,
// groups and addresses) on the mesh's GossipSub topic and keeps the others'
// in a Directory until they expire or their peer disconnects (and
// departed: WithDeparture). Gossip alone
// is slow to reach everyone while a mesh forms: a message published before
// a peer's GossipSub mesh exists reaches almost nobody. So:
//
//   - on every connection it dials, a peer asks the other side, in one
//     request and one response on SyncProtocol, for the advertisements it
//     lacks or holds older, and tells its own in the request;
//   - every peer pulls the same way from a random connected peer, every
//     250 ms while that brings new peers, backing off to a third of the TTL
//     (at most 30 s) when it does not; at steady state an exchange is a
//     summary and an empty answer, and when gossip loses republications,
//     pulls refresh what would otherwise expire;
//   - a peer republishes once when the topic gains its first peer;
//   - an advertisement within a third of its TTL from expiry, so that gossip
//     missed a republication, is asked of its origin when connected to it.
//
// Above the lookup threshold (WithLargeMesh, asked every second) the
// directory is narrow: it leaves the topic, publishes on none, and holds
// only the advertisements of the peers it is connected to, each from
// that peer itself (its exchanges ask for the answerer's own only); the
// others' names are found by lookup. Below three quarters of the
// threshold it joins the topic again (see ads_scope.go).
//
// Every advertisement is verified against the key of the peer it describes,
// however it arrived; a bad one, or a malformed exchange, is dropped and
// counted (Directory.Stats). Exchanges are bounded: MaxSyncAds, MaxSyncBytes,
// a 10 s deadline, 8 answered at once (more are reset), a queue of 256
// peers to ask.
//
// # Names by lookup
//
// Above a mesh size (WithLookupAbove, DefaultLookupAbove; DHT.Large
// judges it from the routing table) the DHT provides this peer's names
// (WithNames) under their NameKey, and FindName returns the providers of
// a name, which the caller confirms with each provider itself. The
// provider store bounds name records per provider and in all.
// Advertisements carry the mesh-wide names a peer claims (WithClaims,
// Advertisement.Global).
//
// # Files
//
//	options.go       the options of StartAds, StartDHT and StartMDNS
//	mdns.go          mDNS on the LAN: the service, its restarts and requeries
//	mdns_dial.go     dialing the peers mDNS finds, with retries
//	dht.go           the DHT rendezvous: advertising and finding
//	dht_store.go     the DHT's bounded provider store
//	names.go         names provided and looked up in the DHT
//	dht_relays.go    relays provided and looked up in the DHT
//	bootstrap.go     staying joined: bootstrap peers dialed until reached
//	ads.go           advertisements: format, publication
//	ads_sign.go      signing and verifying them
//	ads_store.go     the directory of advertisements held
//	ads_relayed.go   what second-hand advertisements a peer may make it hold
//	ads_scope.go     which it holds: all, or above the threshold the connected peers'
//	adsync.go        the directory exchange, asking side (pulls, new peers)
//	adsync_serve.go  the directory exchange, answering side
package discovery
