package peer

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"os"
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
	if !(&floorHandler{Handler: slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})}).Enabled(context.Background(), slog.LevelDebug) {
		t.Error("a debug handler's floor refuses debug records")
	}
}

// TestLibraryLogsFollowTheLevelAndDropNoise: the standard log package's
// lines (go-zeroconf's) become records of the handler, at debug; libp2p's
// expected warnings (a leaving peer's identify stream) come at debug; a
// level changed at run time holds for libp2p's records too.
func TestLibraryLogsFollowTheLevelAndDropNoise(t *testing.T) {
	defer log.SetOutput(os.Stderr)
	var out lockedBuffer
	var level slog.LevelVar
	level.Set(slog.LevelInfo)
	LogLibp2pTo(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: &level}))
	shim := gologshim.Logger("troupe-test-noise")
	log.Print("[zeroconf] no suitable IPv4 interface: quiet at info")
	log.Print("a plain line from some library")
	shim.Warn("error reading identify message", "err", "stream reset")
	shim.Warn("a real warning")
	shim.Warn("failed to identify peer", "error", "failed to open new stream: read: connection reset by peer")
	shim.Warn("failed to identify peer", "error", "protocols not supported")
	shim.Debug("a debug record at info")
	got := out.String()
	if strings.Count(got, "failed to identify peer") != 1 || !strings.Contains(got, "protocols not supported") {
		t.Errorf("identify failures: one of a leaving peer (debug), one real (a warning):\n%s", got)
	}
	for _, bad := range []string{"quiet at info", "error reading identify", "a debug record"} {
		if strings.Contains(got, bad) {
			t.Errorf("at info the log has %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{`"level":"WARN","msg":"a plain line from some library","logger":"log"`, `"msg":"a real warning"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %s:\n%s", want, got)
		}
	}
	level.Set(slog.LevelDebug)
	SetLibp2pLevel(slog.LevelDebug)
	log.Print("[zeroconf] no suitable IPv4 interface: seen at debug")
	shim.Warn("error reading identify message", "err", "stream reset")
	shim.Debug("a debug record at debug")
	got = out.String()
	for _, want := range []string{
		`"level":"DEBUG","msg":"no suitable IPv4 interface: seen at debug","logger":"zeroconf"`,
		`"level":"DEBUG","msg":"error reading identify message"`,
		`"msg":"a debug record at debug"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("at debug the log lacks %s:\n%s", want, got)
		}
	}
	for line := range strings.Lines(got) {
		if !strings.HasPrefix(line, `{"time":"`) {
			t.Errorf("a line without a time: %q", line)
		}
	}
	level.Set(slog.LevelInfo)
	SetLibp2pLevel(slog.LevelInfo)
}
