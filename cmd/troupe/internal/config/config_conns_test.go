package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/peer"
)

func TestConfigConnections(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"connections": {"low": -1}}`, "connections.low"},
		{`{"connections": {"high": -1}}`, "connections.high"},
		{`{"connections": {"low": 10, "high": 5}}`, "connections.high"},
		{`{"connections": {"high": 8}}`, "connections.high"}, // below the default low
		{`{"connections": {"grace_seconds": -1}}`, "connections.grace_seconds"},
		{`{"connections": {"Low": 1}}`, `unknown field "connections.Low"`},
	} {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(c.json), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.json, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"connections": {"low": 4, "high": 6, "grace_seconds": 5}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Connections.budget(), (peer.Connections{Low: 4, High: 6, Grace: 5 * time.Second}); got != want {
		t.Fatalf("budget %+v, want %+v", got, want)
	}
	if got := Default().Connections.budget(); got != (peer.Connections{}) {
		t.Fatalf("default budget %+v, want the zero value (peer's defaults)", got)
	}
}
