package actor

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// What only a thread-style actor does: block in a call of its own, block
// in Ask, unwind when stopped.

// TestThreadBlockedInIODoesNotDelayEventActors blocks a thread in a read
// of a pipe nobody writes, on a system of one loop, and checks that the
// thread runs on no loop's carrier, that event actors on that loop still
// trade many messages, that the loop never blocked (the watchdog replaced
// no carrier), and that an exit signal sent meanwhile stops the thread
// only once its read returns and it receives. The watchdog's threshold is
// long: a read on the only carrier would hold it until w is closed, so
// the ping-pong could not end before a replacement; a short threshold
// also replaces carriers that a loaded machine merely descheduled.
func TestThreadBlockedInIODoesNotDelayEventActors(t *testing.T) {
	s := newSys(t, WithLoops(1), WithWatchdog(time.Second))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // a failed check must not leave the thread in its read
	reading := make(chan struct{})
	afterReceive := make(chan struct{}, 1)
	reader := mustSpawnThread(t, s, "reader", func(th *Thread) {
		if s.InEventLoop() {
			t.Error("the thread runs on a loop's carrier")
		}
		close(reading)
		buf := make([]byte, 1)
		if _, err := r.Read(buf); err == nil { // blocks until w is closed
			t.Error("read a byte nobody wrote")
		}
		th.Receive(Any(func(any) {})) // the kill is in the mailbox: stops here
		afterReceive <- struct{}{}
	})
	recv(t, reading)
	downs := watcher(t, s, reader)
	s.send(reader, Ref{}, exitSignal{Reason: ErrShutdown, Kill: true}, 0, kindSignal)

	// Event actors ping-pong while the thread is blocked in its read.
	const rounds = 20_000
	done := make(chan time.Duration, 1)
	pong := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(Loop(On(func(n int) { c.Reply(n) })))
	})
	start := time.Now()
	mustSpawn(t, s, "", func(c *Context) {
		left := rounds
		c.Send(pong, left)
		c.Receive(Loop(On(func(int) {
			if left--; left == 0 {
				done <- time.Since(start)
				c.Stop()
				return
			}
			c.Send(pong, left)
		})))
	})
	el := recv(t, done) // within recv's bound, 5 s: some microseconds a round trip
	t.Logf("%d event round trips in %v while a thread blocks in a read", rounds, el)
	if n := s.group.Replacements(); n != 0 {
		t.Fatalf("the watchdog replaced %d carriers: the loop blocked", n)
	}
	if _, ok := s.Whereis("reader"); !ok {
		t.Fatal("the thread stopped while blocked in its read")
	}

	w.Close() // the read returns; the next Receive takes the kill
	if d := recv(t, downs); !errors.Is(d.Reason, ErrShutdown) {
		t.Fatalf("reason %v, want ErrShutdown", d.Reason)
	}
	if len(afterReceive) != 0 {
		t.Fatal("Receive returned to a killed thread")
	}
}

func mustSpawnThread(t testing.TB, s *System, name string, b ThreadBehavior, opts ...SpawnOption) Ref {
	t.Helper()
	ref, err := s.SpawnThread(name, b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestThreadAskBlocksForTheReply(t *testing.T) {
	s := newSys(t)
	echo := mustSpawn(t, s, "echo", func(c *Context) {
		c.Receive(Loop(On(func(n int) { c.Reply(n + 1) })))
	})
	silent := mustSpawn(t, s, "", func(c *Context) { c.Receive(On(func(int) {})) })
	type result struct {
		v   any
		err error
	}
	out := make(chan result, 4)
	mustSpawnThread(t, s, "", func(th *Thread) {
		th.Send(th.Self(), "waits for later") // kept while Ask waits
		for _, q := range []struct {
			to Ref
			d  time.Duration
		}{{echo, time.Second}, {silent, 20 * time.Millisecond}, {mustRef(t, s.Peer()+"/nobody"), time.Second}, {echo, 0}} {
			v, err := th.Ask(q.to, 41, q.d)
			out <- result{v, err}
		}
		th.Receive(On(func(m string) {
			if m != "waits for later" {
				t.Errorf("saved message %q", m)
			}
		}))
	})
	if r := recv(t, out); r.err != nil || r.v != 42 {
		t.Fatalf("ask echo: %v, %v", r.v, r.err)
	}
	if r := recv(t, out); !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("ask silent: %v, want DeadlineExceeded", r.err)
	}
	if r := recv(t, out); !errors.Is(r.err, ErrNoSuchActor) {
		t.Fatalf("ask nobody: %v, want ErrNoSuchActor", r.err)
	}
	if r := recv(t, out); !errors.Is(r.err, ErrBadReceive) {
		t.Fatalf("ask with no timeout: %v, want ErrBadReceive", r.err)
	}
}

// A thread in blocking style: Sender and Reply concern the message last
// received, after Receive returned too.
func TestThreadRepliesAfterReceiveReturns(t *testing.T) {
	s := newSys(t)
	ref := mustSpawnThread(t, s, "", func(th *Thread) {
		for {
			var q int
			th.Receive(On(func(n int) { q = n }))
			th.Reply(q * 10) // after the handler, before the next Receive
		}
	})
	for i := 1; i <= 3; i++ {
		v, err := s.Ask(t.Context(), ref, i)
		if err != nil || v != i*10 {
			t.Fatalf("ask %d: %v, %v", i, v, err)
		}
	}
}

// A stopped thread unwinds: its deferred calls run before its monitors
// and links hear of its exit.
func TestThreadDeferredCallsRunBeforeDown(t *testing.T) {
	s := newSys(t)
	deferred := make(chan struct{})
	ref := mustSpawnThread(t, s, "", func(th *Thread) {
		defer close(deferred)
		th.Receive(On(func(string) {}))
	})
	downs := watcher(t, s, ref)
	s.send(ref, Ref{}, exitSignal{Kill: true}, 0, kindSignal)
	d := recv(t, downs)
	select {
	case <-deferred:
	default:
		t.Fatal("Down arrived before the thread's deferred call ran")
	}
	if !errors.Is(d.Reason, ErrKilled) {
		t.Fatalf("reason %v, want ErrKilled", d.Reason)
	}
}

func TestThreadStopsOnMisuse(t *testing.T) {
	cases := map[string]struct {
		b    ThreadBehavior
		want error
	}{
		"context receive": {func(th *Thread) { th.Context.Receive(On(func(string) {})) }, ErrBadReceive},
		"context ask": {func(th *Thread) {
			th.Context.Ask(th.Self(), 1, time.Second, func(any, error) {})
			th.Receive(Any(func(any) {}))
		}, ErrBadReceive},
		"loop":   {func(th *Thread) { th.Receive(Loop(Any(func(any) {}))) }, ErrBadReceive},
		"goexit": {func(th *Thread) { runtime.Goexit() }, ErrGoexit},
		"stop":   {func(th *Thread) { th.Stop(); th.Receive(Any(func(any) {})); panic("Receive returned") }, nil},
	}
	s := newSys(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gate := make(chan struct{})
			ref := mustSpawnThread(t, s, "", func(th *Thread) { <-gate; tc.b(th) })
			downs := watcher(t, s, ref)
			close(gate)
			if d := recv(t, downs); !errors.Is(d.Reason, tc.want) || (tc.want == nil && d.Reason != nil) {
				t.Fatalf("reason %v, want %v", d.Reason, tc.want)
			}
		})
	}
}

// batchRecorder is a batchRemote that records what it is given.
type batchRecorder struct {
	recordingRemote
	mu   sync.Mutex
	outs []outbound
}

func (b *batchRecorder) DeliverBatch(_ Ref, msgs []outbound) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outs = append(b.outs, msgs...)
	return len(msgs), nil
}

func (b *batchRecorder) sent() []outbound {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]outbound(nil), b.outs...)
}

// A thread is addressed from other peers as any actor is, and what it
// sends them leaves at once: it may block right after.
func TestThreadTalksToOtherPeers(t *testing.T) {
	br := &batchRecorder{}
	s := newSys(t, WithPeer("me"), withRemote(br))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	blocked := make(chan struct{})
	ref := mustSpawnThread(t, s, "svc", func(th *Thread) {
		th.Receive(On(func(m string) { th.Reply(m + " back") }))
		close(blocked)
		_, _ = r.Read(make([]byte, 1)) // blocks until the test ends
	})
	far := mustRef(t, "them/client")
	s.port.Deliver(envelope{To: ref, From: far, Msg: "hello", Corr: 7})
	recv(t, blocked)
	out := br.sent()
	if len(out) != 1 || out[0].To != far || out[0].Msg != "hello back" || out[0].Corr != 7 || !out[0].Reply {
		t.Fatalf("the remote got %+v, want the reply to them/client", out)
	}
}

// An event actor pays nothing for threads in memory: a Context keeps the
// 176 bytes its layout comment promises (a size class); a
// thread's own fields live in its Thread.
func TestContextSizeUnchangedByThreads(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit layout")
	}
	if n := unsafe.Sizeof(Context{}); n != 176 {
		t.Fatalf("a Context is %d bytes, want 176", n)
	}
}

// Shutdown called by a thread would wait for that thread to stop, for
// ever with a context that never ends: it is refused, as on a loop.
func TestThreadShutdownIsABlockingCall(t *testing.T) {
	s := newSys(t)
	errs := make(chan error, 1)
	mustSpawnThread(t, s, "", func(th *Thread) {
		errs <- s.Shutdown(context.Background())
	})
	if err := recv(t, errs); !errors.Is(err, ErrBlockingCall) {
		t.Fatalf("Shutdown from a thread: %v, want ErrBlockingCall", err)
	}
}

// A thread written in continuation style (a Receive in every handler)
// nests one receive per message: past maxNested it stops with
// ErrBadReceive, where its stack would grow until the runtime killed the
// process.
func TestThreadEndlessNestingStops(t *testing.T) {
	s := newSys(t)
	ref := mustSpawnThread(t, s, "", func(th *Thread) {
		var h Case
		h = On(func(int) { th.Receive(h) })
		th.Receive(h)
	})
	downs := watcher(t, s, ref)
	for range maxNested + 1 {
		s.Send(ref, 1)
	}
	if d := recv(t, downs); !errors.Is(d.Reason, ErrBadReceive) {
		t.Fatalf("reason %v, want ErrBadReceive", d.Reason)
	}
}
