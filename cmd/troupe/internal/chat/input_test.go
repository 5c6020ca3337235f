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

// blockingInput gives lines, then blocks in its next Read until released
// (or, with cancel, until Cancel): an input no close can interrupt.
type blockingInput struct {
	lines    string
	again    chan struct{} // closed when Read is called after the lines
	release  chan struct{} // ends a blocked Read
	returned chan struct{} // closed when a blocked Read returned
	once     sync.Once
}

func newBlockingInput(t *testing.T, lines string) *blockingInput {
	in := &blockingInput{lines: lines, again: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	t.Cleanup(in.Release) // before the node's Close (cleanups run last first)
	return in
}

func (in *blockingInput) Read(p []byte) (int, error) {
	if in.lines != "" {
		n := copy(p, in.lines)
		in.lines = in.lines[n:]
		return n, nil
	}
	close(in.again)
	<-in.release
	close(in.returned)
	return 0, io.EOF
}

func (in *blockingInput) Release() { in.once.Do(func() { close(in.release) }) }

// cancelableInput is a blockingInput whose blocked Read Cancel ends.
type cancelableInput struct{ *blockingInput }

func (in cancelableInput) Cancel() bool { in.Release(); return true }

// TestInputThreadReadsNothingAfterQuit: after a /quit line the input's
// thread reads no more and ends, even from an input nothing can
// interrupt: the node's Shutdown, which waits for its threads, ends at
// once instead of waiting for a read that never returns.
func TestInputThreadReadsNothingAfterQuit(t *testing.T) {
	n := chatNode(t)
	in := newBlockingInput(t, "/who\n/quit\n")
	out := &lockedBuilder{}
	if err := Run(t.Context(), n, "ann", "lobby", "", in, out); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.System().Shutdown(ctx); err != nil {
		t.Fatalf("shutdown after /quit: %v (the input's thread still reads?)", err)
	}
	select {
	case <-in.again:
		t.Fatal("the input was read after /quit")
	default:
	}
	if !strings.Contains(out.String(), "* bye") {
		t.Fatalf("no bye in %q", out.String())
	}
}

// TestInputThreadCancelledWithTheSession: when the session's ctx ends
// while the input's thread is blocked in a Read of a Canceler (a
// terminal's cancelreader), Run cancels that Read and returns only once
// the thread has ended.
func TestInputThreadCancelledWithTheSession(t *testing.T) {
	n := chatNode(t)
	in := cancelableInput{newBlockingInput(t, "/who\n")}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-in.again; cancel() }() // the thread is blocked in its next Read
	out := &lockedBuilder{}
	if err := Run(ctx, n, "ann", "lobby", "! stopping", in, out); err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.returned:
	default:
		t.Fatal("Run returned while its input's thread was still blocked in a Read")
	}
	if !strings.HasSuffix(out.String(), "! stopping\n") {
		t.Fatalf("the stop note is not last: %q", out.String())
	}
}
