package actor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func echoBehavior(c *Context) {
	forever(c, func() []Case { return []Case{Any(func(m any) { c.Reply(m) })} })
}

func TestAskFromPlainCode(t *testing.T) {
	s := newSys(t)
	echo := mustSpawn(t, s, "echo", echoBehavior)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.Ask(ctx, echo, 42)
	if err != nil || v != 42 {
		t.Fatalf("ask: %v, %v", v, err)
	}
}

func TestAskTimeoutIsDeadlineExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		silent := mustSpawn(t, s, "silent", func(c *Context) {
			forever(c, func() []Case { return []Case{Any(func(any) {})} })
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := s.Ask(ctx, silent, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("System.Ask: %v, want DeadlineExceeded", err)
		}
		errs := make(chan error, 1)
		mustSpawn(t, s, "", func(c *Context) {
			c.Ask(silent, 1, time.Second, func(_ any, err error) { errs <- err })
		})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Context.Ask: %v, want DeadlineExceeded", err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAskInsideActorKeepsOtherMessages(t *testing.T) {
	s := newSys(t)
	echo := mustSpawn(t, s, "", echoBehavior)
	out := make(chan any, 3)
	a := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(On(func(string) {
			c.Send(c.Self(), 7) // arrives while waiting for the reply
			c.Ask(echo, "q", 5*time.Second, func(r any, err error) {
				out <- r
				c.Receive(On(func(n int) { out <- n }))
			})
		}))
	})
	s.Send(a, "start")
	if r := recv(t, out); r != "q" {
		t.Fatalf("reply %v", r)
	}
	if r := recv(t, out); r != 7 {
		t.Fatalf("kept message %v", r)
	}
}

func TestAskUnknownActorFailsFast(t *testing.T) {
	s := newSys(t)
	ghost, _ := NewRef(s.Peer(), "ghost")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Ask(ctx, ghost, 1); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("ask ghost: %v, want ErrNoSuchActor", err)
	}
	errs := make(chan error, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.Ask(ghost, 1, time.Hour, func(_ any, err error) { errs <- err })
	})
	if err := recv(t, errs); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("Context.Ask ghost: %v", err)
	}
}

func TestSystemAskOnLoopIsAnError(t *testing.T) {
	s := newSys(t)
	errs := make(chan error, 1)
	echo := mustSpawn(t, s, "", echoBehavior)
	mustSpawn(t, s, "", func(c *Context) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := s.Ask(ctx, echo, 1)
		errs <- err
	})
	if err := recv(t, errs); !errors.Is(err, ErrBlockingCall) {
		t.Fatalf("ask on loop: %v, want ErrBlockingCall", err)
	}
}

func TestLateReplyIsDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var letters []DeadLetter
		s, err := New(WithLogger(quietLogger()), WithDeadLetterHook(func(d DeadLetter) {
			mu.Lock()
			letters = append(letters, d)
			mu.Unlock()
		}))
		if err != nil {
			t.Fatal(err)
		}
		slow := mustSpawn(t, s, "slow", func(c *Context) {
			c.Receive(Any(func(any) {
				req := c.Request()
				c.ReceiveWithin(2*time.Second, Timeout(func() { c.Respond(req, "late") }))
			}))
		})
		errs := make(chan error, 1)
		asker := mustSpawn(t, s, "asker", func(c *Context) {
			c.Ask(slow, 1, time.Second, func(_ any, err error) {
				errs <- err
				c.Receive(On(func(string) { t.Error("a late reply reached a case") }))
			})
		})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(letters) != 1 || letters[0].Msg != "late" || letters[0].To != asker || !errors.Is(letters[0].Reason, ErrLateReply) {
			t.Fatalf("dead letters %+v", letters)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
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

type recordingRemote struct {
	mu   sync.Mutex
	envs []Envelope
	err  error
}

func (r *recordingRemote) Deliver(to, from Ref, msg any, corr uint64, reply bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.envs = append(r.envs, Envelope{To: to, From: from, Msg: msg, Corr: corr, Reply: reply})
	return r.err
}

func TestRemoteHookCarriesNonLocalRefs(t *testing.T) {
	rr := &recordingRemote{}
	s := newSys(t, WithPeer("me"), WithRemote(rr))
	far, _ := ParseRef("them/echo")
	done := make(chan Ref, 1)
	mustSpawn(t, s, "sender", func(c *Context) {
		c.Send(far, "hi")
		c.Monitor(far)
		done <- c.Self()
		c.Receive(Any(func(any) {}))
	})
	self := recv(t, done)
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if len(rr.envs) != 2 {
		t.Fatalf("remote saw %d envelopes, want 2", len(rr.envs))
	}
	if e := rr.envs[0]; e.To != far || e.From != self || e.Msg != "hi" {
		t.Fatalf("envelope %+v", e)
	}
	if _, ok := rr.envs[1].Msg.(MonitorSignal); !ok {
		t.Fatalf("second envelope %+v, want a MonitorSignal", rr.envs[1])
	}
}

func TestRemoteErrorBecomesDeadLetterAndFailsAsk(t *testing.T) {
	errFull := errors.New("link full")
	s := newSys(t, WithPeer("me"), WithRemote(&recordingRemote{err: errFull}))
	far, _ := ParseRef("them/echo")
	errs := make(chan error, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.Ask(far, 1, time.Hour, func(_ any, err error) { errs <- err })
	})
	if err := recv(t, errs); !errors.Is(err, errFull) {
		t.Fatalf("ask: %v", err)
	}
	if s.DeadLetters() != 1 {
		t.Fatalf("dead letters %d", s.DeadLetters())
	}
}

func TestDeliverFromRemote(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	got := make(chan [2]any, 1)
	echo := mustSpawn(t, s, "echo", func(c *Context) {
		c.Receive(Any(func(m any) { got <- [2]any{m, c.Sender()} }))
	})
	far, _ := ParseRef("them/x")
	s.Port().Deliver(Envelope{To: echo, From: far, Msg: "remote hi"})
	if g := recv(t, got); g[0] != "remote hi" || g[1] != far {
		t.Fatalf("got %v", g)
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
	s, err := New(WithLogger(quietLogger()))
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

func TestPeerDownFiresRemoteMonitorsAndLinks(t *testing.T) {
	s := newSys(t, WithPeer("me"), WithRemote(&recordingRemote{}))
	far, _ := ParseRef("them/x")
	other, _ := ParseRef("elsewhere/y")
	got := make(chan any, 4)
	ready := make(chan struct{})
	mustSpawn(t, s, "", func(c *Context) {
		c.TrapExit(true)
		c.Monitor(far)
		c.Monitor(other)
		c.Link(far)
		close(ready)
		forever(c, func() []Case {
			return []Case{On(func(d Down) { got <- d }), On(func(e Exit) { got <- e }), On(func(m string) { got <- m })}
		})
	})
	<-ready
	s.Port().PeerDown("them")
	var down, exit bool
	for range 2 {
		switch m := recv(t, got).(type) {
		case Down:
			down = m.Ref == far && errors.Is(m.Reason, ErrNodeDown)
		case Exit:
			exit = m.From == far && errors.Is(m.Reason, ErrNodeDown)
		}
	}
	if !down || !exit {
		t.Fatalf("down=%v exit=%v", down, exit)
	}
	s.Port().PeerDown("them") // nothing left to fire
	for _, c := range s.names.all() {
		s.Send(c.Self(), "marker")
	}
	if m := recv(t, got); m != "marker" {
		t.Fatalf("second PeerDown fired %v", m)
	}
}

func TestAskWaiterTakesOnlyItsReply(t *testing.T) {
	letters := make(chan DeadLetter, 10)
	s := newSys(t, WithDeadLetterHook(func(d DeadLetter) { letters <- d }))
	// The target writes to the asker before replying, and replies twice.
	chatty := mustSpawn(t, s, "chatty", func(c *Context) {
		forever(c, func() []Case {
			return []Case{Any(func(m any) {
				c.Send(c.Sender(), "not a reply")
				c.Reply(m)
				c.Reply("second")
			})}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	before := s.Actors()
	if v, err := s.Ask(ctx, chatty, 1); err != nil || v != 1 {
		t.Fatalf("ask: %v, %v", v, err)
	}
	if s.Actors() != before {
		t.Fatalf("Actors() = %d after an ask, want %d", s.Actors(), before)
	}
	// The message and the second reply become dead letters.
	got := map[any]bool{}
	for range 2 {
		got[recv(t, letters).Msg] = true
	}
	if !got["not a reply"] || !got["second"] {
		t.Fatalf("dead letters %v, want the message and the second reply", got)
	}
}

func TestAskEndsAtShutdown(t *testing.T) {
	s, err := New(WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	silent := mustSpawn(t, s, "silent", func(c *Context) {
		forever(c, func() []Case { return []Case{Any(func(any) { asked <- struct{}{} })} })
	})
	errs := make(chan error, 1)
	go func() {
		_, err := s.Ask(context.Background(), silent, 1)
		errs <- err
	}()
	recv(t, asked) // the Ask is waiting for its reply
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, errs); !errors.Is(err, ErrShutdown) {
		t.Fatalf("ask during shutdown: %v, want ErrShutdown", err)
	}
	if _, err := s.Ask(context.Background(), silent, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("ask after shutdown: %v, want ErrClosed", err)
	}
}

func TestNamesChangedHookSeesPublicNamesOnly(t *testing.T) {
	changes := make(chan struct{}, 10)
	// One loop: activations run in the order they were queued.
	s := newSys(t, WithLoops(1), WithNamesChanged(func() { changes <- struct{}{} }))
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

// TestPeerDownDropsMonitorsFromThatPeer: monitors that actors on a peer
// hold on a local actor are dropped when that peer goes away; the others
// stay, and get their Down when the actor stops.
func TestPeerDownDropsMonitorsFromThatPeer(t *testing.T) {
	rr := &recordingRemote{}
	s := newSys(t, WithPeer("me"), WithRemote(rr))
	gone, _ := ParseRef("them/w")
	stays, _ := ParseRef("elsewhere/w")
	target := mustSpawn(t, s, "target", func(c *Context) {
		c.Receive(On(func(string) {})) // stops after one message
	})
	s.deliverLocal(target, s.newNode(MonitorSignal{ID: 7}, gone, 0, kindSignal))
	s.deliverLocal(target, s.newNode(MonitorSignal{ID: 7}, stays, 0, kindSignal))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for edges(s, edgeWatcher) != 2 { // the target handles the signals
		select {
		case <-ctx.Done():
			t.Fatalf("%d remote watchers indexed, want 2", edges(s, edgeWatcher))
		case <-time.After(time.Millisecond):
		}
	}
	s.Port().PeerDown("them")
	s.Send(target, "stop")
	for s.Actors() != 0 || edges(s, edgeWatcher) != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("target still running or edges left: %d actors, %d edges", s.Actors(), edges(s, edgeWatcher))
		case <-time.After(time.Millisecond):
		}
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	var downs []Ref
	for _, e := range rr.envs {
		if d, ok := e.Msg.(DownSignal); ok && d.ID == 7 {
			downs = append(downs, e.To)
		}
	}
	if len(downs) != 1 || downs[0] != stays {
		t.Fatalf("Downs sent to %v, want only %v", downs, stays)
	}
}

// sentRemote hands each message for another peer to a channel.
type sentRemote struct{ sent chan Envelope }

func (r *sentRemote) Deliver(to, from Ref, msg any, corr uint64, reply bool) error {
	r.sent <- Envelope{To: to, From: from, Msg: msg, Corr: corr, Reply: reply}
	return nil
}

func TestPeerDownFailsPendingAsks(t *testing.T) {
	rr := &sentRemote{sent: make(chan Envelope, 16)}
	s := newSys(t, WithPeer("me"), WithRemote(rr))
	far, _ := ParseRef("them/x")
	other, _ := ParseRef("elsewhere/y")
	errs := make(chan error, 4)
	asker := func(to Ref) Behavior {
		return func(c *Context) {
			c.Ask(to, "q", time.Hour, func(_ any, err error) { errs <- err })
		}
	}
	mustSpawn(t, s, "a1", asker(far))
	stays := mustSpawn(t, s, "a2", asker(other))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		_, err := s.Ask(ctx, far, "q")
		errs <- err
	}()
	// An Ask is indexed before its request leaves.
	for range 3 {
		recv(t, rr.sent)
	}
	if n := edges(s, edgeAsk); n != 3 {
		t.Fatalf("%d asks indexed, want 3", n)
	}
	s.Port().PeerDown("them")
	for range 2 {
		err := recv(t, errs)
		if !errors.Is(err, ErrNodeDown) {
			t.Fatalf("ask of a peer that went away: %v, want ErrNodeDown", err)
		}
		// From an actor and from plain code alike, the error names the
		// Ask once.
		if want := "actor: ask them/x: " + ErrNodeDown.Error(); err.Error() != want {
			t.Fatalf("ask of a peer that went away: %q, want %q", err, want)
		}
	}
	if n := edges(s, edgeAsk); n != 1 {
		t.Fatalf("%d asks indexed after PeerDown, want the one of the other peer", n)
	}
	// An actor that stops while it asks leaves nothing behind.
	downs := make(chan Down, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.Monitor(stays)
		s.deliverLocal(stays, s.newNode(ExitSignal{Reason: errors.New("killed"), Kill: true}, Ref{}, 0, kindSignal))
		c.Receive(On(func(d Down) { downs <- d }))
	})
	recv(t, downs)
	if n := edges(s, edgeAsk); n != 0 {
		t.Fatalf("%d asks indexed after the asker stopped", n)
	}
	select {
	case err := <-errs:
		t.Fatalf("the Ask of the other peer ended with %v", err)
	default:
	}
}

func TestFinishedRemoteAsksLeaveTheIndex(t *testing.T) {
	rr := &sentRemote{sent: make(chan Envelope, 16)}
	s := newSys(t, WithPeer("me"), WithRemote(rr))
	far, _ := ParseRef("them/x")
	got := make(chan any, 4)
	mustSpawn(t, s, "asker", func(c *Context) {
		c.Ask(far, "answered", time.Hour, func(reply any, err error) {
			got <- reply
			c.Ask(far, "ignored", 10*time.Millisecond, func(_ any, err error) { got <- err })
		})
	})
	req := recv(t, rr.sent)
	s.deliverLocal(req.From, s.newNode("answer", far, req.Corr, kindReply))
	if r := recv(t, got); r != "answer" {
		t.Fatalf("reply %v", r)
	}
	recv(t, rr.sent)
	if err, _ := recv(t, got).(error); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second ask: %v, want a timeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.Ask(ctx, far, "plain"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("plain ask: %v, want a timeout", err)
	}
	if n := edges(s, edgeAsk); n != 0 {
		t.Fatalf("%d finished asks still indexed", n)
	}
}

// edges counts the edges of kind in s's remote index.
func edges(s *System, kind edgeKind) int {
	s.remote.mu.Lock()
	defer s.remote.mu.Unlock()
	n := 0
	for _, m := range s.remote.peers {
		for e := range m {
			if e.kind == kind {
				n++
			}
		}
	}
	return n
}

// An Ask after a Receive or Ask in the same step is refused before its
// request leaves: the actor stops with ErrBadReceive, and no Ask of it
// stays indexed.
func TestSecondAskInOneStepIsRefused(t *testing.T) {
	rr := &sentRemote{sent: make(chan Envelope, 16)}
	s := newSys(t, WithPeer("me"), WithRemote(rr))
	far, _ := ParseRef("them/x")
	asker := mustSpawn(t, s, "asker", func(c *Context) {
		c.Receive(On(func(string) {
			c.Ask(far, "first", time.Hour, func(any, error) {})
			c.Ask(far, "second", time.Hour, func(any, error) {})
		}))
	})
	downs := make(chan Down, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.Monitor(asker) // before the asker asks: its Down follows its clean-up
		s.Send(asker, "go")
		c.Receive(On(func(d Down) { downs <- d }))
	})
	if d := recv(t, downs); !errors.Is(d.Reason, ErrBadReceive) {
		t.Fatalf("the asker stopped with %v, want ErrBadReceive", d.Reason)
	}
	if e := recv(t, rr.sent); e.Msg != "first" {
		t.Fatalf("sent %v", e.Msg)
	}
	select {
	case e := <-rr.sent:
		t.Fatalf("the refused Ask sent %v", e.Msg)
	default:
	}
	if n := edges(s, edgeAsk); n != 0 {
		t.Fatalf("%d asks indexed after the asker stopped", n)
	}
}

// TestRemoteWatchLimit: the monitors and links one other peer holds on
// this system's actors are capped; beyond the cap a monitor is answered
// with Down{ErrSystemLimit} and a link with an exit signal of that reason,
// and neither is kept. Other peers have their own count; a demonitor or
// PeerDown makes room again.
func TestRemoteWatchLimit(t *testing.T) {
	rr := &sentRemote{sent: make(chan Envelope, 64)}
	s := newSys(t, WithPeer("me"), WithRemote(rr), WithRemoteWatchLimit(3))
	synced := make(chan struct{})
	target := mustSpawn(t, s, "target", func(c *Context) {
		c.TrapExit(true) // PeerDown breaks its link
		var h Case
		h = On(func(string) { synced <- struct{}{}; c.Receive(h) })
		c.Receive(h)
	}, AcceptRemoteLinks())
	// signal hands target the signals from their senders, then waits
	// until it handled them.
	signal := func(sigs ...Envelope) {
		t.Helper()
		for _, e := range sigs {
			s.deliverLocal(target, s.newNode(e.Msg, e.From, 0, kindSignal))
		}
		s.Send(target, "sync")
		recv(t, synced)
	}
	ref := func(text string) Ref {
		r, err := ParseRef(text)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// refused returns what was sent back to the remote actors since the
	// last call: every one must carry ErrSystemLimit.
	refused := func() (out []Envelope) {
		t.Helper()
		for {
			select {
			case e := <-rr.sent:
				var reason error
				switch m := e.Msg.(type) {
				case DownSignal:
					reason = m.Reason
				case ExitSignal:
					reason = m.Reason
				}
				if !errors.Is(reason, ErrSystemLimit) || e.From != target {
					t.Fatalf("sent %+v, want a refusal with ErrSystemLimit from the target", e)
				}
				out = append(out, e)
			default:
				return out
			}
		}
	}
	w1, w2, l := ref("them/w1"), ref("them/w2"), ref("them/l")
	signal(Envelope{From: w1, Msg: MonitorSignal{ID: 1}}, Envelope{From: w1, Msg: MonitorSignal{ID: 2}},
		Envelope{From: w2, Msg: MonitorSignal{ID: 1}},
		Envelope{From: w1, Msg: MonitorSignal{ID: 1}}, // again: already made, not refused
		Envelope{From: w2, Msg: MonitorSignal{ID: 9}}, Envelope{From: l, Msg: LinkSignal{}},
		Envelope{From: ref("elsewhere/w"), Msg: MonitorSignal{ID: 1}})
	got := refused()
	if len(got) != 2 || got[0].To != w2 || got[1].To != l {
		t.Fatalf("refusals %+v, want a Down to them/w2 and an exit to them/l", got)
	}
	if d, ok := got[0].Msg.(DownSignal); !ok || d.ID != 9 {
		t.Fatalf("refusal %+v, want Down for monitor 9", got[0])
	}
	if x, ok := got[1].Msg.(ExitSignal); !ok || !x.Linked {
		t.Fatalf("refusal %+v, want a linked exit signal", got[1])
	}
	if n, k := edges(s, edgeWatcher), edges(s, edgeLink); n != 4 || k != 0 {
		t.Fatalf("%d watchers and %d links kept, want 4 and 0", n, k)
	}
	// A demonitor makes room for one.
	signal(Envelope{From: w1, Msg: DemonitorSignal{ID: 2}}, Envelope{From: l, Msg: LinkSignal{}},
		Envelope{From: w2, Msg: MonitorSignal{ID: 10}})
	if got := refused(); len(got) != 1 || got[0].To != w2 {
		t.Fatalf("refusals %+v, want one, of them/w2's monitor", got)
	}
	if k := edges(s, edgeLink); k != 1 {
		t.Fatalf("%d links, want 1", k)
	}
	// PeerDown clears the peer's count.
	s.Port().PeerDown("them")
	signal(Envelope{From: w1, Msg: MonitorSignal{ID: 3}}, Envelope{From: w1, Msg: MonitorSignal{ID: 4}},
		Envelope{From: w1, Msg: MonitorSignal{ID: 5}})
	if got := refused(); len(got) != 0 {
		t.Fatalf("refusals after PeerDown: %+v", got)
	}
	if n := edges(s, edgeWatcher); n != 4 { // three from them, one from elsewhere
		t.Fatalf("%d watchers, want 4", n)
	}
	if _, err := New(WithRemoteWatchLimit(0)); err == nil {
		t.Fatal("a watch limit of 0 was accepted")
	}
}
