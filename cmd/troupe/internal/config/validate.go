package config

import (
	"cmp"
	"net"
	"strconv"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/peer"
)

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
