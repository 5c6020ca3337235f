// Package peer is a Troupe peer: a libp2p host, its identity and
// configuration, the actor system it hosts and the router that carries
// messages between them and other peers.
//
// # Lifecycle
//
// New creates the host (listening on the configured addresses, with NAT
// port mapping and relays off unless asked for), starts the actor system
// and binds the router to it. Close drains outbound links within its
// context's deadline, stops the actors, then closes the host, waiting for
// every goroutine the node started.
//
// # Liveness and healing
//
// A connected peer that something here waits on (a monitor or link
// either way, an Ask, messages queued) and that answers no ping and
// sends nothing for the liveness timeout (WithLiveness, DefaultLiveness)
// is declared gone: its connections are closed, and its monitors,
// links and Asks see actor.ErrNodeDown. A peer the application connected
// to, a bootstrap peer, or one declared gone is redialed with backoff
// when it disconnects. docs/reliability.md has the numbers.
//
// # Security
//
// Every connection is authenticated (TLS or Noise): a Ref's peer ID is the
// proven identity of the sender. WithAllowlist refuses connections from or
// to any other peer; WithPrivateNetwork admits only peers holding the same
// pre-shared key (TCP only).
//
// # Files
//
//	node.go       Node, New, Close
//	accessors.go  ID, Addrs, Host, System, Router, their stats; Ref
//	node_send.go  SendCtx, Publish, GroupReady: messages from plain code
//	options.go    the options of New
//	connect.go    Connect; peers discovery found
//	dial.go       transports and dial order (TCP before QUIC)
//	dialfail.go   peers found that could not be dialed
//	gater.go      the allowlist
//	identity.go   key files
//	limits.go     the resource manager's limits
//	connmgr.go    the connection budget (Connections) and its manager
//	protect.go    the connection guard: which connections may be trimmed
//	trim.go       which unprotected connections a trim closes (pure)
//	dedupe.go     duplicate connections to one peer closed by the guard
//	relay.go      relay service, relays, hole punching, reachability
//	relayfind.go  relays found in advertisements (AutoRelay's source)
//	relaydht.go   relays found under the DHT's relay key
//	relaymembers.go a relay's members and stranger limit, its counts (RelayStats)
//	probe.go      the prober's and redialer's wiring: WithLiveness, silent peers declared gone
//	holepunch.go  hole punching run by the node: rounds tried again
//	directory.go  what other peers advertise; Whereis
//	globalnames.go  mesh-wide names: ClaimGlobal, WhereisGlobal, GlobalNameLost
//	nodeactor.go  the node actor's face: RegisterBehavior, Lookup, SpawnRemote
//	spawn.go      remote spawn's options: policy, quotas, name prefix, OutlivesSpawner
//	names.go      mesh names and their mDNS service; names looked up in the DHT
//	prometheus.go WithPrometheus: the node's counters sampled for its collector
//	liblog.go     libp2p's logs through slog
//
// # Services in packages of their own
//
// The node wires these; each has a doc.go (what it owns, its goroutines,
// its locks) and gets what it needs of the node at construction.
//
//	internal/latency  pings that keep peers' round trips known; silent peers found
//	internal/redial   peers redialed after they disconnect, with backoff
//	internal/nodesvc  the $node actor: lookups and remote spawns, their quotas and guards
//	internal/lookup   names looked up in the DHT above a size, confirmed, and their cache
//	internal/global   mesh-wide names: claims, their resolution, beaten claims withdrawn
//	internal/relay    the relay service's limits per mesh membership, its counts
//	internal/metrics  Troupe's Prometheus metrics: names, help, kinds; the collector
package peer
