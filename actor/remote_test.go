package actor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The actor system and its Remote: messages to other peers, PeerDown,
// and the index of monitors, links and asks across peers.

type recordingRemote struct {
	mu   sync.Mutex
	envs []envelope
	err  error
}

func (r *recordingRemote) Deliver(to, from Ref, msg any, corr uint64, reply bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.envs = append(r.envs, envelope{To: to, From: from, Msg: msg, Corr: corr, Reply: reply})
	return r.err
}

func TestRemoteHookCarriesNonLocalRefs(t *testing.T) {
	rr := &recordingRemote{}
	s := newSys(t, WithPeer("me"), withRemote(rr))
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
	if _, ok := rr.envs[1].Msg.(monitorSignal); !ok {
		t.Fatalf("second envelope %+v, want a monitorSignal", rr.envs[1])
	}
}

func TestRemoteErrorBecomesDeadLetterAndFailsAsk(t *testing.T) {
	errFull := errors.New("link full")
	s := newSys(t, WithPeer("me"), withRemote(&recordingRemote{err: errFull}))
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
	s.port.Deliver(envelope{To: echo, From: far, Msg: "remote hi"})
	if g := recv(t, got); g[0] != "remote hi" || g[1] != far {
		t.Fatalf("got %v", g)
	}
}

func TestPeerDownFiresRemoteMonitorsAndLinks(t *testing.T) {
	s := newSys(t, WithPeer("me"), withRemote(&recordingRemote{}))
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
	s.port.PeerDown("them")
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
	s.port.PeerDown("them") // nothing left to fire
	for _, c := range s.names.all() {
		s.Send(c.Self(), "marker")
	}
	if m := recv(t, got); m != "marker" {
		t.Fatalf("second PeerDown fired %v", m)
	}
}

// TestPeerDownDropsMonitorsFromThatPeer: monitors that actors on a peer
// hold on a local actor are dropped when that peer goes away; the others
// stay, and get their Down when the actor stops.
func TestPeerDownDropsMonitorsFromThatPeer(t *testing.T) {
	rr := &recordingRemote{}
	s := newSys(t, WithPeer("me"), withRemote(rr))
	gone, _ := ParseRef("them/w")
	stays, _ := ParseRef("elsewhere/w")
	target := mustSpawn(t, s, "target", func(c *Context) {
		c.Receive(On(func(string) {})) // stops after one message
	})
	s.deliverLocal(target, s.newNode(monitorSignal{ID: 7}, gone, 0, kindSignal))
	s.deliverLocal(target, s.newNode(monitorSignal{ID: 7}, stays, 0, kindSignal))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for edges(s, edgeWatcher) != 2 { // the target handles the signals
		select {
		case <-ctx.Done():
			t.Fatalf("%d remote watchers indexed, want 2", edges(s, edgeWatcher))
		case <-time.After(time.Millisecond):
		}
	}
	s.port.PeerDown("them")
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
		if d, ok := e.Msg.(downSignal); ok && d.ID == 7 {
			downs = append(downs, e.To)
		}
	}
	if len(downs) != 1 || downs[0] != stays {
		t.Fatalf("Downs sent to %v, want only %v", downs, stays)
	}
}

// sentRemote hands each message for another peer to a channel.
type sentRemote struct{ sent chan envelope }

func (r *sentRemote) Deliver(to, from Ref, msg any, corr uint64, reply bool) error {
	r.sent <- envelope{To: to, From: from, Msg: msg, Corr: corr, Reply: reply}
	return nil
}

func TestPeerDownFailsPendingAsks(t *testing.T) {
	rr := &sentRemote{sent: make(chan envelope, 16)}
	s := newSys(t, WithPeer("me"), withRemote(rr))
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
	s.port.PeerDown("them")
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
		s.deliverLocal(stays, s.newNode(exitSignal{Reason: errors.New("killed"), Kill: true}, Ref{}, 0, kindSignal))
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
	rr := &sentRemote{sent: make(chan envelope, 16)}
	s := newSys(t, WithPeer("me"), withRemote(rr))
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

// TestRemoteWatchLimit: the monitors and links one other peer holds on
// this system's actors are capped; beyond the cap a monitor is answered
// with Down{ErrSystemLimit} and a link with an exit signal of that reason,
// and neither is kept. Other peers have their own count; a demonitor or
// PeerDown makes room again.
func TestRemoteWatchLimit(t *testing.T) {
	rr := &sentRemote{sent: make(chan envelope, 64)}
	s := newSys(t, WithPeer("me"), withRemote(rr), withRemoteWatchLimit(3))
	synced := make(chan struct{})
	target := mustSpawn(t, s, "target", func(c *Context) {
		c.TrapExit(true) // PeerDown breaks its link
		var h Case
		h = On(func(string) { synced <- struct{}{}; c.Receive(h) })
		c.Receive(h)
	}, AcceptRemoteLinks())
	// signal hands target the signals from their senders, then waits
	// until it handled them.
	signal := func(sigs ...envelope) {
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
	refused := func() (out []envelope) {
		t.Helper()
		for {
			select {
			case e := <-rr.sent:
				var reason error
				switch m := e.Msg.(type) {
				case downSignal:
					reason = m.Reason
				case exitSignal:
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
	signal(envelope{From: w1, Msg: monitorSignal{ID: 1}}, envelope{From: w1, Msg: monitorSignal{ID: 2}},
		envelope{From: w2, Msg: monitorSignal{ID: 1}},
		envelope{From: w1, Msg: monitorSignal{ID: 1}}, // again: already made, not refused
		envelope{From: w2, Msg: monitorSignal{ID: 9}}, envelope{From: l, Msg: linkSignal{}},
		envelope{From: ref("elsewhere/w"), Msg: monitorSignal{ID: 1}})
	got := refused()
	if len(got) != 2 || got[0].To != w2 || got[1].To != l {
		t.Fatalf("refusals %+v, want a Down to them/w2 and an exit to them/l", got)
	}
	if d, ok := got[0].Msg.(downSignal); !ok || d.ID != 9 {
		t.Fatalf("refusal %+v, want Down for monitor 9", got[0])
	}
	if x, ok := got[1].Msg.(exitSignal); !ok || !x.Linked {
		t.Fatalf("refusal %+v, want a linked exit signal", got[1])
	}
	if n, k := edges(s, edgeWatcher), edges(s, edgeLink); n != 4 || k != 0 {
		t.Fatalf("%d watchers and %d links kept, want 4 and 0", n, k)
	}
	// A demonitor makes room for one.
	signal(envelope{From: w1, Msg: demonitorSignal{ID: 2}}, envelope{From: l, Msg: linkSignal{}},
		envelope{From: w2, Msg: monitorSignal{ID: 10}})
	if got := refused(); len(got) != 1 || got[0].To != w2 {
		t.Fatalf("refusals %+v, want one, of them/w2's monitor", got)
	}
	if k := edges(s, edgeLink); k != 1 {
		t.Fatalf("%d links, want 1", k)
	}
	// PeerDown clears the peer's count.
	s.port.PeerDown("them")
	signal(envelope{From: w1, Msg: monitorSignal{ID: 3}}, envelope{From: w1, Msg: monitorSignal{ID: 4}},
		envelope{From: w1, Msg: monitorSignal{ID: 5}})
	if got := refused(); len(got) != 0 {
		t.Fatalf("refusals after PeerDown: %+v", got)
	}
	if n := edges(s, edgeWatcher); n != 4 { // three from them, one from elsewhere
		t.Fatalf("%d watchers, want 4", n)
	}
	if _, err := New(withRemoteWatchLimit(0)); err == nil {
		t.Fatal("a watch limit of 0 was accepted")
	}
}
