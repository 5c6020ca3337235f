package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
)

// TestWatcherTakesLocalRequestsOnly: the daemon's watcher refuses a Watch
// from another peer (no monitor, nothing printed) and takes the local
// one; a Down reason from a peer reaches the terminal cleaned.
func TestWatcherTakesLocalRequestsOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	newNode := func() *peer.Node {
		reg, err := NewRegistry()
		if err != nil {
			t.Fatal(err)
		}
		n, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"), peer.WithLogger(slog.New(slog.DiscardHandler)), peer.WithRegistry(reg))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close(context.Background()) })
		return n
	}
	a, b := newNode(), newNode()
	if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	out := newSyncBuffer()
	w, err := a.System().Spawn("watcher", func(c *actor.Context) { watcher(c, out) })
	if err != nil {
		t.Fatal(err)
	}
	target, err := a.System().Spawn("target", func(c *actor.Context) {
		c.Receive(actor.On(func(string) { c.Exit(errEscape) }))
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.System().Ask(ctx, w, Watch{Ref: target.String()}); err != nil || v != false {
		t.Fatalf("a remote watch: %v, %v; want false", v, err)
	}
	for range 2 { // watched twice: one monitor, one down line
		if v, err := a.System().Ask(ctx, w, Watch{Ref: target.String()}); err != nil || v != true {
			t.Fatalf("a local watch: %v, %v; want true", v, err)
		}
	}
	a.System().Send(target, "stop")
	out.waitFor(t, "down ")
	// A marker after the Down: were there a second monitor, its Down
	// would come before the marker's reply.
	if v, err := a.System().Ask(ctx, w, Watch{Ref: "bad"}); err != nil || v != false {
		t.Fatalf("a bad watch: %v, %v", v, err)
	}
	got := out.String()
	if strings.Count(got, "down ") != 1 || strings.Count(got, "already") != 1 {
		t.Fatalf("watcher printed %q: want one down line for an actor watched twice", got)
	}
	if strings.Count(got, "watching ") != 2 || strings.ContainsRune(got, '\x1b') || !strings.Contains(got, "[31m") {
		t.Fatalf("watcher printed %q: want one watch, and the reason without its escape", got)
	}
}

var errEscape = errorString("red \x1b[31m reason")

type errorString string

func (e errorString) Error() string { return string(e) }

// syncBuffer is a bytes.Buffer safe for concurrent use, which tells of
// every write (waitFor).
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // gets a token after a write, if it has none
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer contains want, for 10 s at most.
func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.wrote:
		case <-timeout:
			t.Fatalf("no %q within 10 s in %q", want, s.String())
		}
	}
}
