package config

import (
	"bytes"
	"strings"
	"testing"
)

// TestLogFormat: log_format json makes the daemon's log (and libp2p's,
// which LogLibp2pTo sends there) JSON lines; text is slog's key=value.
func TestLogFormat(t *testing.T) {
	for format, want := range map[string]string{"json": `{"time":`, "text": "time="} {
		var out bytes.Buffer
		cfg := Default()
		cfg.LogFormat = format
		l, _ := NewLeveledLogger(&out, cfg)
		l.Info("hello", "peer", "x")
		if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "hello") {
			t.Errorf("%s: %q, want a line starting %q", format, out.String(), want)
		}
	}
}
