package peer

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	golog "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/gologshim"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogLibp2pTo: the loggers of go-libp2p (gologshim, slog) and of the
// DHT (go-log, zap) write to the given handler, in its format, from
// warnings up when it is at info.
func TestLogLibp2pTo(t *testing.T) {
	var out lockedBuffer
	LogLibp2pTo(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	gologshim.Logger("troupe-test-shim").Warn("shim warning", "peer", "x")
	gologshim.Logger("troupe-test-shim").Info("shim info")
	golog.Logger("troupe-test-zap").Warnw("zap warning", "peer", "y")
	golog.Logger("troupe-test-zap").Infow("zap info")
	got := out.String()
	for _, want := range []string{
		`"level":"WARN","msg":"shim warning","logger":"troupe-test-shim","peer":"x"`,
		`"level":"WARN","msg":"zap warning","logger":"troupe-test-zap","peer":"y"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "info") {
		t.Errorf("info records went through at the warning floor:\n%s", got)
	}
	if !(&floorHandler{Handler: slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}), floor: slog.LevelDebug}).Enabled(context.Background(), slog.LevelDebug) {
		t.Error("a debug handler's floor refuses debug records")
	}
}
