package config

import (
	"encoding/json"
	"testing"
)

// TestConfigShowFillsInLimits: config show keeps config.json's limits as
// they are (0: libp2p's default) and adds what each is on this machine,
// with what is set kept as set.
func TestConfigShowFillsInLimits(t *testing.T) {
	cfg := Default()
	cfg.Limits.Conns = 55
	b, err := Show(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var shown struct {
		Limits        ConfigLimits  `json:"limits"`
		InForce       *ConfigLimits `json:"limits_in_force"`
		Mesh          string        `json:"mesh"`
		DeadLetterCfg any           `json:"dead_letters"`
	}
	if err := json.Unmarshal(b, &shown); err != nil {
		t.Fatalf("config show is not JSON: %v\n%s", err, b)
	}
	if shown.Mesh != cfg.Mesh || shown.Limits.Streams != 0 || shown.Limits.Conns != 55 {
		t.Fatalf("the configuration itself changed: %+v", shown)
	}
	if shown.InForce == nil {
		t.Fatalf("no limits_in_force:\n%s", b)
	}
	in := *shown.InForce
	if in.Conns != 55 {
		t.Errorf("conns in force %d, want the 55 set", in.Conns)
	}
	if in.Streams == 0 || in.MemoryMiB == 0 || in.FDs == 0 || in.ConnsPerPeer == 0 || in.StreamWindowKiB != 1024 {
		t.Errorf("a default left as 0 (or the window wrong): %+v", in)
	}
}
