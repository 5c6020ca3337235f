package chat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// chatNode starts a loopback node that can chat (groups on, no
// discovery), closed when the test ends.
func chatNode(t *testing.T) *peer.Node {
	t.Helper()
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	Register(reg)
	n, err := peer.New(t.Context(), peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"), peer.WithLogger(slog.New(slog.DiscardHandler)),
		peer.WithRegistry(reg), peer.WithGroups(true), peer.WithMDNS(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

// runWith runs a session reading the pipe r until end, returning what
// it wrote; it fails t if the session does not end within 10 s.
func runWith(ctx context.Context, t *testing.T, n *peer.Node, r *io.PipeReader) string {
	t.Helper()
	out := &lockedBuilder{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, n, "ann", "lobby", "! stopping", r, out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
	return out.String()
}

// lockedBuilder is a strings.Builder safe for concurrent use.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInputThreadEndsWithTheSession: the input's thread-style reader
// ends with the session, however it ends: after a /quit line (with the
// input still open), and when the session's ctx ends (a daemon
// stopping) while it is blocked in a read. Either way nothing reads the
// input afterwards: a write to it fails at once instead of feeding a
// session that is gone.
func TestInputThreadEndsWithTheSession(t *testing.T) {
	n := chatNode(t)
	t.Run("quit", func(t *testing.T) {
		r, w := io.Pipe()
		go func() { _, _ = io.WriteString(w, "/quit\n") }()
		out := runWith(t.Context(), t, n, r)
		if !strings.Contains(out, "* bye") {
			t.Fatalf("no bye in %q", out)
		}
		if _, err := io.WriteString(w, "hello\n"); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("a line typed after /quit: %v; want ErrClosedPipe (nobody reads)", err)
		}
	})
	t.Run("stop", func(t *testing.T) {
		r, w := io.Pipe()
		ctx, cancel := context.WithCancel(t.Context())
		typed := make(chan struct{})
		go func() { _, _ = io.WriteString(w, "/who\n"); close(typed) }()
		go func() { <-typed; cancel() }() // the reader is blocked in its next read
		out := runWith(ctx, t, n, r)
		if !strings.HasSuffix(out, "! stopping\n") {
			t.Fatalf("the stop note is not last: %q", out)
		}
		if _, err := io.WriteString(w, "hello\n"); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("a line typed after the stop: %v; want ErrClosedPipe (nobody reads)", err)
		}
	})
	if names := n.System().Names(); len(names) != 0 {
		t.Fatalf("actors left after the sessions: %v", names)
	}
}

func TestIsQuit(t *testing.T) {
	for line, want := range map[string]bool{"/quit": true, "  /quit now ": true, "/quitter": false, "quit": false, "": false} {
		if isQuit(line) != want {
			t.Errorf("isQuit(%q) = %v", line, !want)
		}
	}
}
