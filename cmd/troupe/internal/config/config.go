package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	ma "github.com/multiformats/go-multiaddr"
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

// ErrInvalid marks a configuration error (exit code 2).
var ErrInvalid = errors.New("bad configuration")

// ErrUsage marks a bad key or value given on the command line (config
// set): the CLI exits with code 2 and drops the "usage: " prefix.
var ErrUsage = errors.New("usage")

// configError names the field and the problem.
func configError(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// Load reads path over the defaults. A missing file yields the
// defaults and exists=false.
func Load(path string) (cfg Config, exists bool, err error) {
	cfg = Default()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, true, fmt.Errorf("%w: %s: %s", ErrInvalid, path, jsonProblem(err))
	}
	if err := exactKeys(b, reflect.TypeFor[Config](), ""); err != nil {
		return cfg, true, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	if dec.More() {
		return cfg, true, fmt.Errorf("%w: %s: more than one JSON value", ErrInvalid, path)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, true, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, true, nil
}

// exactKeys reports a key of the JSON object b that is not exactly the
// json name of a field of t, looking into fields that are structs.
// (encoding/json matches names regardless of case: "Mesh" would set
// mesh, and a config that only works by that luck should be fixed.)
func exactKeys(b []byte, t reflect.Type, prefix string) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil // not an object: the decoder said so
	}
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields[name] = t.Field(i).Type
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		ft, ok := fields[k]
		if !ok {
			return fmt.Errorf("unknown field %q", prefix+k)
		}
		if ft.Kind() == reflect.Struct {
			if err := exactKeys(obj[k], ft, prefix+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonProblem turns a decoding error into a message naming the field.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("field %q: %s is not a valid %s", te.Field, te.Value, te.Type)
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "invalid JSON: the file ends in the middle of a value"
	}
	return err.Error()
}

// Validate checks every field and names the first bad one.
func (c *Config) Validate() error {
	if len(c.Listen) == 0 {
		return configError("listen", "at least one address is needed")
	}
	for _, a := range c.Listen {
		if _, err := ma.NewMultiaddr(a); err != nil {
			return configError("listen", "%q is not a multiaddr: %v", a, err)
		}
	}
	if err := peer.CheckMesh(c.Mesh); err != nil {
		return configError("mesh", "%v", err)
	}
	if d, err := time.ParseDuration(cmp.Or(c.Liveness, "0s")); err != nil || (d != 0 && d < peer.MinLiveness) {
		return configError("liveness", "%q: a duration of at least %v, or 0 for none", c.Liveness, peer.MinLiveness)
	}
	for _, b := range c.Bootstrap {
		if _, err := ParsePeerAddr(b); err != nil {
			return configError("bootstrap", "%v", err)
		}
	}
	for _, r := range c.Relays {
		if _, err := ParsePeerAddr(r); err != nil {
			return configError("relays", "%v", err)
		}
	}
	switch c.DHT {
	case "client", "server", "off":
	default:
		return configError("dht", "%q: use client, server or off", c.DHT)
	}
	for _, id := range c.Allowlist {
		if _, err := libp2ppeer.Decode(id); err != nil {
			return configError("allowlist", "%q is not a peer ID", id)
		}
	}
	for _, id := range c.RelayMembers {
		if _, err := libp2ppeer.Decode(id); err != nil {
			return configError("relay_members", "%q is not a peer ID", id)
		}
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		return configError("log_level", "%v", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return configError("log_format", "%q: use text or json", c.LogFormat)
	}
	if c.Metrics != "" {
		_, port, err := net.SplitHostPort(c.Metrics)
		if err != nil {
			return configError("metrics", "%q is not host:port", c.Metrics)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return configError("metrics", "%q: the port must be a number from 0 to 65535", c.Metrics)
		}
	}
	if c.UI != "" {
		if err := CheckUIAddr(c.UI); err != nil {
			return configError("ui", "%q: %v", c.UI, err)
		}
	}
	if err := c.Connections.validate(); err != nil {
		return err
	}
	if k := c.DeadLetters.Keep; k < 0 || k > maxDeadLettersKept {
		return configError("dead_letters.keep", "%d: must be from 0 to %d", k, maxDeadLettersKept)
	}
	if _, bad := c.Limits.peerLimits(); bad != "" {
		return configError("limits."+bad, "must be 0 (libp2p's default) or positive")
	}
	if c.Limits.MemoryMiB > 1<<40>>20 {
		return configError("limits.memory_mib", "%d MiB is more than 1 TiB", c.Limits.MemoryMiB)
	}
	if w := c.Limits.StreamWindowKiB; w != 0 && (w < peer.MinStreamWindow>>10 || w > peer.MaxStreamWindow>>10) {
		return configError("limits.stream_window_kib", "%d KiB: must be from %d to %d, or 0 for %d",
			w, peer.MinStreamWindow>>10, peer.MaxStreamWindow>>10, peer.DefaultStreamWindow>>10)
	}
	return nil
}

// maxDeadLettersKept caps dead_letters.keep (as actor.WithDeadLetterLog).
const maxDeadLettersKept = 1 << 16

// PeerOptions turns a validated configuration into node options.
func (c *Config) PeerOptions(home string) ([]peer.Option, error) {
	opts := []peer.Option{
		peer.WithListenAddrs(c.Listen...),
		peer.WithMesh(c.Mesh),
		peer.WithMDNS(c.MDNS),
		peer.WithGroups(true),
		peer.WithNATPortMap(c.NATPortMap),
		peer.WithRelayService(c.RelayService),
		peer.WithRelayDiscovery(c.FindRelays),
	}
	for _, r := range c.Relays {
		ai, _ := ParsePeerAddr(r)
		opts = append(opts, peer.WithRelays(ai))
	}
	if l, _ := c.Limits.peerLimits(); l != (peer.Limits{}) {
		opts = append(opts, peer.WithLimits(l))
	}
	opts = append(opts, peer.WithConnections(c.Connections.budget()))
	if c.Liveness != "" {
		d, _ := time.ParseDuration(c.Liveness)
		opts = append(opts, peer.WithLiveness(d))
	}
	var boots []libp2ppeer.AddrInfo
	for _, b := range c.Bootstrap {
		ai, _ := ParsePeerAddr(b)
		boots = append(boots, ai)
	}
	if c.DHT == "server" || (c.DHT == "client" && len(boots) > 0) {
		opts = append(opts, peer.WithDHT(boots...), peer.WithDHTClient(c.DHT == "client"))
	}
	for _, s := range c.RelayMembers {
		id, _ := libp2ppeer.Decode(s) // validated
		opts = append(opts, peer.WithRelayMembers(id))
	}
	if len(c.Allowlist) > 0 {
		ids := make([]libp2ppeer.ID, 0, len(c.Allowlist))
		for _, s := range c.Allowlist {
			id, _ := libp2ppeer.Decode(s)
			ids = append(ids, id)
		}
		opts = append(opts, peer.WithAllowlist(ids...))
	}
	if c.PSKFile != "" {
		path := c.PSKFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(home, path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, configError("psk_file", "%v", err)
		}
		defer f.Close()
		psk, err := pnet.DecodeV1PSK(f)
		if err != nil {
			return nil, configError("psk_file", "%s: %v", path, err)
		}
		opts = append(opts, peer.WithPrivateNetwork(psk))
	}
	return opts, nil
}

// Write writes cfg to path (mode 0600) without replacing an existing
// file half-way: it writes a temporary file and renames it.
func Write(path string, cfg Config) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
