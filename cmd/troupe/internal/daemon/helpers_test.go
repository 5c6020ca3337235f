package daemon

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// startTestDaemon runs a daemon in this process on a fresh home (loopback
// only, no mDNS) until the test ends, with its log in logs.
func startTestDaemon(t *testing.T, logs *cli.LockedWriter) (*Daemon, cli.Home) {
	d, h, _ := startStoppableDaemon(t, logs)
	return d, h
}

// startStoppableDaemon is startTestDaemon with a func that stops the
// daemon before the test ends (Close is once; the test's end then does
// nothing).
func startStoppableDaemon(t *testing.T, logs *cli.LockedWriter) (*Daemon, cli.Home, func()) {
	t.Helper()
	h := cli.Home(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := Open(ctx, h, Loopback, Options{Logs: logs, Out: &cli.LockedWriter{W: new(bytes.Buffer)}})
	if err != nil {
		t.Fatal(err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(stop)
	return d, h, stop
}
