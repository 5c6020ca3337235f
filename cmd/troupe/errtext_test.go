package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/daemon"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// startTestDaemon runs a daemon in this process on a fresh home (loopback
// only, no mDNS) until the test ends, with its log in logs.
func startTestDaemon(t *testing.T, logs *cli.LockedWriter) (*daemon.Daemon, cli.Home) {
	d, h, _ := startStoppableDaemon(t, logs)
	return d, h
}

// startStoppableDaemon is startTestDaemon with a func that stops the
// daemon before the test ends (Close is once; the test's end then does
// nothing).
func startStoppableDaemon(t *testing.T, logs *cli.LockedWriter) (*daemon.Daemon, cli.Home, func()) {
	t.Helper()
	h := cli.Home(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := daemon.Open(ctx, h, daemon.Loopback, daemon.Options{Logs: logs, Out: &cli.LockedWriter{W: new(bytes.Buffer)}})
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

// TestErrorLinesSayItOnce: the CLI's line for each common mistake is one
// line with the exit code of its kind, names what is wrong, carries no
// "usage:" prefix, and says no phrase (nor the peer's ID) twice.
func TestErrorLinesSayItOnce(t *testing.T) {
	d, h := startTestDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
	self := d.Node().ID().String()
	empty := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no daemon", []string{"peers", "-home", empty}, 1, []string{"troupe peers: no daemon is running on " + empty, "troupe daemon"}},
		{"unknown local actor", []string{"send", self + "/nobody", "1"}, 1, []string{`troupe send: no such actor "nobody" on this peer`}},
		{"unknown local actor, ask", []string{"ask", self + "/nobody", "1"}, 1, []string{`no such actor "nobody" on this peer`}},
		{"bad JSON", []string{"send", self + "/echo", "{bad"}, 2, []string{"troupe send: message is not JSON"}},
		{"two JSON values", []string{"ask", self + "/echo", "1 2"}, 2, []string{"more than one JSON value"}},
		{"not an actor address", []string{"send", "no body", "1"}, 2, []string{`address "no body" is neither <peer ID>/<actor name> nor an actor name`}},
		{"a name no peer has", []string{"ask", "nobody", "1"}, 1, []string{`troupe ask: no peer of the mesh has an actor named "nobody"`}},
		{"unknown peer", []string{"ask", testPeer + "/echo", "1", "-timeout", "3s"}, 1, []string{"asking " + testPeer + "/echo: routing: peer unreachable: no addresses"}},
		{"wrong address", []string{"connect", "/ip4/127.0.0.1/tcp/1/p2p/" + testPeer, "-timeout", "5s"}, 1, []string{"connecting to " + testPeer, "127.0.0.1"}},
		{"no /p2p/", []string{"connect", "/ip4/127.0.0.1/tcp/1"}, 2, []string{"needs a /p2p/<peer ID> suffix"}},
		{"bad log level", []string{"log", "level", "loud"}, 2, []string{"use debug, info, warn or error"}},
	} {
		args := c.args
		if !strings.Contains(strings.Join(args, " "), "-home") {
			args = append(args, "-home", string(h))
		}
		code, out, errOut := runCLI(t, args...)
		line := strings.TrimSuffix(errOut, "\n")
		t.Logf("%s: %s", c.name, line)
		if code != c.code || out != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", c.name, code, c.code, out, errOut)
			continue
		}
		oneLine(t, c.name, errOut)
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q lacks %q", c.name, line, w)
			}
		}
		if strings.Contains(line, "usage:") || strings.Count(line, "actor: ") > 1 || strings.Count(line, testPeer) > 1 || strings.Count(line, self) > 1 {
			t.Errorf("%s: %q says something twice", c.name, line)
		}
		if p := testutil.RepeatedPhrase(line); p != "" {
			t.Errorf("%s: %q says %q twice", c.name, line, p)
		}
	}
}

func TestRepeatedPhrase(t *testing.T) {
	if p := testutil.RepeatedPhrase("peer: connect X: failed to dial: failed to dial X"); p != "failed to dial" {
		t.Fatalf("RepeatedPhrase found %q", p)
	}
	if p := testutil.RepeatedPhrase("connecting to X: all dials failed"); p != "" {
		t.Fatalf("RepeatedPhrase found %q", p)
	}
	err := cli.DialCause(fmt.Errorf("peer: connect %s: %w", testPeerID(t), errors.New("failed to dial: failed to dial "+testPeer+": all dials failed\n  * [/ip4/127.0.0.1/tcp/1] dial tcp 127.0.0.1:1: connection refused")), testPeerID(t))
	if got := err.Error(); got != "all dials failed; [/ip4/127.0.0.1/tcp/1] dial tcp 127.0.0.1:1: connection refused" {
		t.Fatalf("cli.DialCause: %q", got)
	}
}

func testPeerID(t *testing.T) libp2ppeer.ID {
	id, err := libp2ppeer.Decode(testPeer)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
