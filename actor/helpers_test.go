package actor

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newSys(t testing.TB, opts ...Option) *System {
	t.Helper()
	s, err := New(append([]Option{WithLogger(testutil.QuietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

// recv waits for one value on ch, failing the test after 5 s.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %T", *new(T))
		panic("unreachable")
	}
}

func mustSpawn(t testing.TB, s *System, name string, b Behavior, opts ...SpawnOption) Ref {
	t.Helper()
	ref, err := s.Spawn(name, b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// forever re-installs the same cases after each message.
func forever(c *Context, cases func() []Case) {
	var again func()
	again = func() {
		cs := cases()
		for i, k := range cs {
			k := k
			cs[i] = wrap(k, again)
		}
		c.Receive(cs...)
	}
	again()
}

// wrap runs `then` after case k's handler.
func wrap(k Case, then func()) Case { return &thenCase{k, then} }

type thenCase struct {
	Case
	then func()
}

func (t *thenCase) run(c *Context, n *node) { t.Case.run(c, n); t.then() }

// watcher spawns an actor that monitors ref and sends the Down to the
// returned channel. The monitor signal is in ref's mailbox when it returns.
func watcher(t testing.TB, s *System, ref Ref) <-chan Down {
	t.Helper()
	ch := make(chan Down, 1)
	ready := make(chan struct{})
	mustSpawn(t, s, "", func(c *Context) {
		c.Monitor(ref)
		close(ready)
		c.Receive(On(func(d Down) { ch <- d }))
	})
	recv(t, ready)
	return ch
}
