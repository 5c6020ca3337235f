package actor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

func echoBehavior(c *Context) {
	forever(c, func() []Case { return []Case{Any(func(m any) { c.Reply(m) })} })
}

func TestDeadLettersForUnknownStoppedAndUnroutable(t *testing.T) {
	var mu sync.Mutex
	var letters []DeadLetter
	s := newSys(t, WithDeadLetterHook(func(d DeadLetter) {
		mu.Lock()
		letters = append(letters, d)
		mu.Unlock()
	}))
	ghost, _ := NewRef(s.Peer(), "ghost")
	s.Send(ghost, "a")
	far, _ := ParseRef("otherpeer/x")
	s.Send(far, "b")
	s.Send(Ref{}, "c")
	stopped := mustSpawn(t, s, "", failOn(nil))
	downs := watcher(t, s, stopped)
	s.Send(stopped, struct{}{})
	recv(t, downs)
	s.Send(stopped, "d")
	mu.Lock()
	defer mu.Unlock()
	want := []struct {
		msg    any
		reason error
	}{{"a", ErrNoSuchActor}, {"b", ErrNoRoute}, {"c", ErrNoSuchActor}, {"d", ErrNoSuchActor}}
	if len(letters) != len(want) || s.DeadLetters() != uint64(len(want)) {
		t.Fatalf("dead letters %+v (count %d)", letters, s.DeadLetters())
	}
	for i, w := range want {
		if letters[i].Msg != w.msg || !errors.Is(letters[i].Reason, w.reason) {
			t.Fatalf("dead letter %d: %+v, want %v %v", i, letters[i], w.msg, w.reason)
		}
	}
}

func TestNames(t *testing.T) {
	s := newSys(t)
	if _, err := s.Spawn("dup", failOn(nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Spawn("dup", failOn(nil)); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("duplicate: %v", err)
	}
	for _, bad := range []string{"a/b", "a b", "$x", "tab\t", string([]byte{0xff}), string(make([]byte, 300))} {
		if _, err := s.Spawn(bad, failOn(nil)); !errors.Is(err, ErrInvalidName) {
			t.Fatalf("name %q: %v, want ErrInvalidName", bad, err)
		}
	}
	if _, err := s.Spawn("x", nil); !errors.Is(err, ErrNilBehavior) {
		t.Fatalf("nil behavior: %v", err)
	}
	a, _ := s.Spawn("", failOn(nil))
	b, _ := s.Spawn("", failOn(nil))
	if a == b || a.Name()[0] != '$' {
		t.Fatalf("generated names %v %v", a, b)
	}
	if r, ok := s.Whereis("dup"); !ok || r.Name() != "dup" {
		t.Fatal("whereis dup")
	}
	if _, ok := s.Whereis("nope"); ok {
		t.Fatal("whereis nope")
	}
}

func TestRefText(t *testing.T) {
	r, err := ParseRef("12D3KooW/chat-ann")
	if err != nil || r.Peer() != "12D3KooW" || r.Name() != "chat-ann" || r.String() != "12D3KooW/chat-ann" {
		t.Fatalf("%v %v", r, err)
	}
	r2, err := ParseRef("/p2p/12D3KooW/actor/chat-ann")
	if err != nil || r2 != r {
		t.Fatalf("multiaddr form: %v %v", r2, err)
	}
	for _, bad := range []string{"", "noslash", "/name", "peer/", "peer/a/b", "/p2p/x", "/p2p//actor/n"} {
		if _, err := ParseRef(bad); err == nil {
			t.Fatalf("ParseRef(%q) accepted", bad)
		}
	}
	var back Ref
	txt, _ := r.MarshalText()
	if err := back.UnmarshalText(txt); err != nil || back != r {
		t.Fatal("text round trip")
	}
	if (Ref{}).String() != "<none>" || !(Ref{}).IsZero() {
		t.Fatal("zero ref")
	}
	m := map[Ref]int{r: 1}
	if m[r2] != 1 {
		t.Fatal("refs to the same actor are not equal map keys")
	}
}

func TestBadSystemOptions(t *testing.T) {
	for i, o := range []Option{WithLoops(0), WithThroughput(0), WithWatchdog(-1), WithSpin(-1), WithLogger(nil), WithPeer(""), WithPeer("a/b")} {
		if _, err := New(o); err == nil {
			t.Fatalf("bad option %d accepted", i)
		}
	}
}

func TestMillionIdleActorsAddNoGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spawns a million actors")
	}
	s := newSys(t)
	n := 1_000_000
	if raceEnabled {
		// The race detector makes each actor several times heavier and
		// slower; .ci/run also runs this test without it, at full size.
		n = 200_000
	}
	before := runtime.NumGoroutine()
	var started atomic.Int64
	all := make(chan struct{})
	for i := range n {
		_, err := s.Spawn(fmt.Sprintf("idle%d", i), func(c *Context) {
			if started.Add(1) == int64(n) {
				close(all)
			}
			c.Receive(On(func(struct{}) {}))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d of %d actors started", started.Load(), n)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before, %d with %d idle actors", before, after, n)
	}
	if s.Actors() != n {
		t.Fatalf("Actors() = %d", s.Actors())
	}
}

func TestBlockedActorDoesNotDelayItsLoop(t *testing.T) {
	s := newSys(t, WithLoops(1), WithWatchdog(100*time.Millisecond))
	// exchange runs 1,000 actors on the same (only) loop: 500 pairs, 10,000
	// messages, and returns how long it took.
	exchange := func() time.Duration {
		const pairs, rounds = 500, 10
		done := make(chan struct{})
		var left atomic.Int64
		left.Store(pairs)
		start := time.Now()
		for range pairs {
			pong := mustSpawn(t, s, "", func(c *Context) {
				forever(c, func() []Case { return []Case{On(func(n int) { c.Reply(n) })} })
			})
			mustSpawn(t, s, "", func(c *Context) {
				var ping func(i int)
				ping = func(i int) {
					if i == rounds {
						if left.Add(-1) == 0 {
							close(done)
						}
						c.Stop()
						return
					}
					c.Send(pong, i)
					c.Receive(On(func(int) { ping(i + 1) }))
				}
				ping(0)
			})
		}
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatal("the exchange waited for the blocked actor")
		}
		return time.Since(start)
	}
	// The same exchange with nothing blocked, so that a loaded machine
	// (the race detector, other processes) does not fail the test.
	base := exchange()
	never := make(chan struct{})
	resumed := make(chan int, 1)
	blocker := mustSpawn(t, s, "blocker", func(c *Context) {
		c.Receive(On(func(struct{}) {
			// Blocks its loop's carrier for 2 s on a channel.
			select {
			case <-never:
			case <-time.After(2 * time.Second):
			}
			c.Receive(On(func(n int) { resumed <- n }))
		}))
	})
	s.Send(blocker, struct{}{})
	if el := exchange(); el > 500*time.Millisecond && el > base+400*time.Millisecond {
		t.Fatalf("exchange took %v with a blocked actor on the loop (%v without), want < 500ms", el, base)
	}
	if s.group.Replacements() < 1 {
		t.Fatal("watchdog did not replace the carrier")
	}
	s.Send(blocker, 9) // queued while blocked, handled once it returns
	if n := recv(t, resumed); n != 9 {
		t.Fatalf("blocked actor resumed with %d", n)
	}
}

func TestShutdownStopsActorsWithReason(t *testing.T) {
	s, err := New(WithLogger(testutil.QuietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	downs := make(chan Down, 1)
	target := mustSpawn(t, s, "", func(c *Context) { c.Receive(Any(func(any) {})) })
	ready := make(chan struct{})
	mustSpawn(t, s, "", func(c *Context) {
		c.TrapExit(true)
		c.Monitor(target)
		close(ready)
		c.Receive(On(func(d Down) { downs <- d }))
	})
	<-ready
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Actors() != 0 {
		t.Fatalf("%d actors after shutdown", s.Actors())
	}
	if _, err := s.Spawn("", failOn(nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("spawn after shutdown: %v", err)
	}
	select {
	case d := <-downs:
		if !errors.Is(d.Reason, ErrShutdown) {
			t.Fatalf("down reason %v", d.Reason)
		}
	default:
		// The watcher may have been stopped first; either order is fine.
	}
}

func TestNamesChangedHookSeesPublicNamesOnly(t *testing.T) {
	changes := make(chan struct{}, 10)
	// One loop: activations run in the order they were queued.
	s := newSys(t, WithLoops(1), withNamesChanged(func() { changes <- struct{}{} }))
	expect := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-changes:
			case <-time.After(5 * time.Second):
				t.Fatal("no names-changed call")
			}
		}
		select {
		case <-changes:
			t.Fatal("a names-changed call too many")
		default:
		}
	}
	named := mustSpawn(t, s, "visible", func(c *Context) { c.Receive(Any(func(any) { c.Reply(1); c.Stop() })) })
	expect(1)
	unnamed := mustSpawn(t, s, "", func(c *Context) { c.Receive(Any(func(any) { c.Stop() })) })
	s.Send(unnamed, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Ask(ctx, named, 0); err != nil {
		t.Fatal(err)
	}
	// The named actor's stop; not the unnamed one's (it stopped first, on
	// the same loop), nor the Ask's waiter.
	expect(1)
}
