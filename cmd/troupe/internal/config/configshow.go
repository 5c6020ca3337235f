package config

import (
	"encoding/json"

	"github.com/troupe-mesh/troupe/peer"
)

// shownConfig is what 'troupe config show' prints: the configuration, and
// the limits a daemon started with it would hold on this machine.
type shownConfig struct {
	Config
	// LimitsInForce is Limits with every 0 (libp2p's default) replaced by
	// what that default is on this machine; -1 is no limit. It is computed
	// here, not a setting: config.json refuses it.
	LimitsInForce *ConfigLimits `json:"limits_in_force,omitempty"`
}

// Show renders cfg for 'troupe config show'. Limits that peer
// refuses leave limits_in_force out (the daemon would not start; the
// error says why when it does).
func Show(cfg Config) ([]byte, error) {
	shown := shownConfig{Config: cfg}
	if l, bad := cfg.Limits.peerLimits(); bad == "" {
		if in, err := peer.EffectiveLimits(l, 0); err == nil {
			shown.LimitsInForce = configLimitsOf(in)
		}
	}
	return json.MarshalIndent(shown, "", "  ")
}

// configLimitsOf is l as config.json's limits section (memory in MiB,
// the stream window in KiB; -1 stays -1).
func configLimitsOf(l peer.Limits) *ConfigLimits {
	mib := int(l.Memory >> 20)
	if l.Memory < 0 {
		mib = -1
	}
	return &ConfigLimits{
		MemoryMiB: mib, FDs: l.FDs, Conns: l.Conns, ConnsInbound: l.ConnsInbound,
		Streams: l.Streams, StreamsInbound: l.StreamsInbound,
		ConnsPerPeer: l.ConnsPerPeer, StreamsPerPeer: l.StreamsPerPeer,
		StreamWindowKiB: l.StreamWindow >> 10,
	}
}
