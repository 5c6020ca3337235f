package config

import (
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
)

// Config is the daemon's configuration, read from $TROUPE_HOME/config.json.
// Every field has a default; a missing file means all defaults. Unknown
// fields are an error, so a typo never goes unnoticed.
type Config struct {
	// Listen is the multiaddrs the peer listens on.
	Listen []string `json:"listen"`
	// Mesh is the mesh name: peers only find peers of the same mesh.
	Mesh string `json:"mesh"`
	// Bootstrap is the DHT bootstrap peers, multiaddrs ending in /p2p/<id>.
	// None are built in.
	Bootstrap []string `json:"bootstrap"`
	// MDNS turns discovery on the LAN by multicast DNS on or off.
	MDNS bool `json:"mdns"`
	// DHT is "client" (use the DHT through the bootstrap peers, the
	// default), "server" (also serve it: run one per mesh for others to
	// bootstrap from) or "off".
	DHT string `json:"dht"`
	// PSKFile is a private-network key file (libp2p's swarm.key format,
	// relative to the home directory unless absolute); empty for none.
	PSKFile string `json:"psk_file"`
	// Allowlist is the peer IDs allowed to connect; empty admits everyone.
	Allowlist []string `json:"allowlist"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// LogFormat is text (slog's key=value lines) or json.
	LogFormat string `json:"log_format"`
	// Metrics is a host:port where Prometheus metrics are served at
	// /metrics; empty for none.
	Metrics string `json:"metrics"`
	// UI is a loopback host:port where the live mesh view is served (a
	// web page and its HTTP/JSON API); empty for none.
	UI string `json:"ui"`
	// NATPortMap asks the router for a port mapping (UPnP / NAT-PMP).
	NATPortMap bool `json:"nat_port_map"`
	// RelayService makes this peer a circuit relay and AutoNAT server
	// for the others (run it on a reachable machine).
	RelayService bool `json:"relay_service"`
	// RelayMembers are peer IDs a relay treats as its mesh's members
	// (no limits on their circuits; with a PSK or allowlist, everyone).
	RelayMembers []string `json:"relay_members,omitempty"`
	// Relays are the relays (multiaddrs with /p2p/) this peer reserves a
	// slot on when it is not reachable; hole punching is on with them.
	Relays []string `json:"relays"`
	// FindRelays uses, when this peer is not reachable and Relays is
	// empty, the relays of the mesh it is connected to (peers with
	// relay_service whose relay runs).
	FindRelays bool `json:"find_relays"`
	// Limits caps the peer's libp2p resources; 0 keeps libp2p's default,
	// scaled to the machine.
	Limits ConfigLimits `json:"limits"`
	// Liveness is how long a silent connected peer may go unanswered
	// before it is declared gone (peer.WithLiveness): a Go duration
	// ("15s"), "0" for none; empty: peer.DefaultLiveness.
	Liveness string `json:"liveness,omitempty"`
	// Connections is the connection budget (config_conns.go).
	Connections ConfigConnections `json:"connections"`
	// DeadLetters is what the daemon keeps of messages that reached no
	// actor ('troupe deadletters').
	DeadLetters ConfigDeadLetters `json:"dead_letters"`
}

// ConfigDeadLetters is the "dead_letters" section of config.json.
type ConfigDeadLetters struct {
	// Keep is how many of the latest dead letters the daemon remembers
	// (type, size, sender and reason, never the message), 0 to 65536.
	Keep int `json:"keep"`
}

// ConfigLimits is the "limits" section of config.json (peer.Limits).
type ConfigLimits struct {
	MemoryMiB      int `json:"memory_mib"`
	FDs            int `json:"fds"`
	Conns          int `json:"conns"`
	ConnsInbound   int `json:"conns_inbound"`
	Streams        int `json:"streams"`
	StreamsInbound int `json:"streams_inbound"`
	ConnsPerPeer   int `json:"conns_per_peer"`
	StreamsPerPeer int `json:"streams_per_peer"`
	// StreamWindowKiB is the initial receive window of each stream
	// (peer.Limits.StreamWindow), from 256 to 16384 KiB; 0 means 1024.
	StreamWindowKiB int `json:"stream_window_kib"`
}

// peerLimits returns the limits as peer.Limits, or the name of the first
// negative field.
func (l ConfigLimits) peerLimits() (peer.Limits, string) {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"memory_mib", l.MemoryMiB}, {"fds", l.FDs}, {"conns", l.Conns}, {"conns_inbound", l.ConnsInbound},
		{"streams", l.Streams}, {"streams_inbound", l.StreamsInbound},
		{"conns_per_peer", l.ConnsPerPeer}, {"streams_per_peer", l.StreamsPerPeer},
		{"stream_window_kib", l.StreamWindowKiB},
	} {
		if f.v < 0 {
			return peer.Limits{}, f.name
		}
	}
	return peer.Limits{
		Memory: int64(l.MemoryMiB) << 20, FDs: l.FDs, Conns: l.Conns, ConnsInbound: l.ConnsInbound,
		Streams: l.Streams, StreamsInbound: l.StreamsInbound,
		ConnsPerPeer: l.ConnsPerPeer, StreamsPerPeer: l.StreamsPerPeer,
		StreamWindow: l.StreamWindowKiB << 10,
	}, ""
}

// Default is the configuration for a laptop: TCP and QUIC on every
// interface with random ports, mDNS on, the DHT as a client without
// bootstrap peers, no port mapping.
func Default() Config {
	return Config{
		Listen:     peer.DefaultListenAddrs(),
		Mesh:       "default",
		Bootstrap:  []string{},
		MDNS:       true,
		DHT:        "client",
		Allowlist:  []string{},
		Relays:     []string{},
		FindRelays: true,
		LogLevel:   "info",
		LogFormat:  "text",

		DeadLetters: ConfigDeadLetters{Keep: actor.DefaultDeadLetterKeep},
	}
}
