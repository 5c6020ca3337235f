package main

import (
	"encoding/json"
	"testing"
)

// TestConfigShowFillsInLimits: config show keeps config.json's limits as
// they are (0: libp2p's default) and adds what each is on this machine,
// with what is set kept as set.
func TestConfigShowFillsInLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.Conns = 55
	b, err := showConfig(cfg)
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

// TestConfigSetJSON: config set --json says what it wrote, as JSON.
func TestConfigSetJSON(t *testing.T) {
	home := t.TempDir()
	code, out, errOut := runCLI(t, "config", "set", "-json", "mesh", "team-b", "-home", home)
	if code != 0 {
		t.Fatalf("config set -json: %d %q %q", code, out, errOut)
	}
	var r struct {
		Key     string          `json:"key"`
		Value   json.RawMessage `json:"value"`
		Config  string          `json:"config"`
		Running *bool           `json:"daemon_running"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v: %q", err, out)
	}
	if r.Key != "mesh" || string(r.Value) != `"team-b"` || r.Config != home+"/config.json" || r.Running == nil || *r.Running {
		t.Fatalf("config set -json said %+v (%s)", r, out)
	}
}
