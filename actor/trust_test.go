package actor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// trustRig is a system of peer "me" whose Remote records what it sends,
// with an actor "target" that reports the messages it handles and, via
// sync, that it handled every signal delivered before.
type trustRig struct {
	s      *System
	rr     *sentRemote
	target Ref
	got    chan any
}

func newTrustRig(t *testing.T, trap bool, opts ...SpawnOption) *trustRig {
	t.Helper()
	g := &trustRig{rr: &sentRemote{sent: make(chan envelope, 64)}, got: make(chan any, 16)}
	g.s = newSys(t, WithPeer("me"), withRemote(g.rr))
	g.target = mustSpawn(t, g.s, "target", func(c *Context) {
		c.TrapExit(trap)
		var h Case
		h = Any(func(m any) { g.got <- m; c.Receive(h) })
		c.Receive(h)
	}, opts...)
	return g
}

// signal hands target sig from `from` and waits until target handled it;
// sig must not become a message (an Exit while trapping, say).
func (g *trustRig) signal(t *testing.T, from Ref, sig spi.Signal) {
	t.Helper()
	g.s.deliverLocal(g.target, g.s.newNode(sig, from, 0, kindSignal))
	g.s.Send(g.target, "sync")
	if m := recv(t, g.got); m != "sync" {
		t.Fatalf("the target handled %#v for %#v from %v", m, sig, from)
	}
}

func (g *trustRig) alive(t *testing.T) {
	t.Helper()
	if _, ok := g.s.Whereis("target"); !ok {
		t.Fatal("target was stopped")
	}
}

func mustRef(t *testing.T, text string) Ref {
	t.Helper()
	r, err := ParseRef(text)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRemotePeerCannotKill: no exit signal from another peer's actor stops
// an actor that has no link to it, Kill or not, trapping or not.
func TestRemotePeerCannotKill(t *testing.T) {
	for _, trap := range []bool{false, true} {
		g := newTrustRig(t, trap)
		far := mustRef(t, "them/x")
		g.signal(t, far, exitSignal{Kill: true})
		g.signal(t, far, exitSignal{Reason: errBoom, Kill: true})
		g.signal(t, far, exitSignal{Reason: errBoom})
		g.signal(t, far, exitSignal{Reason: errBoom, Linked: true})
		g.alive(t)
		select {
		case m := <-g.got:
			t.Fatalf("trap %v: the target handled %#v", trap, m)
		default:
		}
	}
}

// TestRemoteLinksNeedConsent: a link request from another peer is
// refused with ErrLinkRefused unless the actor was spawned with
// AcceptRemoteLinks, so that linking and then disconnecting (PeerDown)
// cannot stop it; with consent the link is made.
func TestRemoteLinksNeedConsent(t *testing.T) {
	far := mustRef(t, "them/x")
	g := newTrustRig(t, false)
	g.signal(t, far, linkSignal{})
	e := recv(t, g.rr.sent)
	if x, ok := e.Msg.(exitSignal); !ok || !x.Linked || !errors.Is(x.Reason, ErrLinkRefused) || e.To != far {
		t.Fatalf("answer to the link: %+v, want a linked exit with ErrLinkRefused to %v", e, far)
	}
	g.s.port.PeerDown("them")
	g.s.Send(g.target, "sync")
	recv(t, g.got)
	g.alive(t)

	// With consent and no trap, a disconnection stops it, as in Erlang.
	g = newTrustRig(t, false, AcceptRemoteLinks())
	g.signal(t, far, linkSignal{})
	down := watcher(t, g.s, g.target)
	g.s.port.PeerDown("them")
	if d := recv(t, down); !errors.Is(d.Reason, ErrNodeDown) {
		t.Fatalf("down %v, want ErrNodeDown", d.Reason)
	}
}

// TestTrappedRemoteKillArrivesAsExit: along a link the actor accepted, an
// exit signal from another peer marked Kill is an ordinary exit: a
// trapping actor handles it as Exit.
func TestTrappedRemoteKillArrivesAsExit(t *testing.T) {
	far := mustRef(t, "them/x")
	g := newTrustRig(t, true, AcceptRemoteLinks())
	g.signal(t, far, linkSignal{})
	g.s.deliverLocal(g.target, g.s.newNode(exitSignal{Reason: errBoom, Kill: true}, far, 0, kindSignal))
	m := recv(t, g.got)
	if x, ok := m.(Exit); !ok || x.From != far || !errors.Is(x.Reason, errBoom) {
		t.Fatalf("handled %#v, want Exit from %v with errBoom", m, far)
	}
	g.alive(t)
}

// TestAskWaiterTakesNoRemoteSignal: a System.Ask waiting for a reply from
// another peer is not ended by an exit signal (a kill included) that a
// peer sends to the waiter's name; the reply still completes it.
func TestAskWaiterTakesNoRemoteSignal(t *testing.T) {
	rr := &sentRemote{sent: make(chan envelope, 16)}
	s := newSys(t, WithPeer("me"), withRemote(rr))
	far := mustRef(t, "them/x")
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := s.Ask(ctx, far, "ping")
		done <- result{v, err}
	}()
	req := recv(t, rr.sent)
	waiterRef := req.From
	for _, sig := range []spi.Signal{exitSignal{Kill: true}, exitSignal{Reason: errBoom, Kill: true}, exitSignal{Reason: errBoom}} {
		s.deliverLocal(waiterRef, s.newNode(sig, far, 0, kindSignal))
	}
	select {
	case r := <-done:
		t.Fatalf("the Ask ended on a remote signal: %v, %v", r.v, r.err)
	default:
	}
	s.deliverLocal(waiterRef, s.newNode("pong", far, req.Corr, kindReply))
	if r := recv(t, done); r.err != nil || r.v != "pong" {
		t.Fatalf("ask: %v, %v; want pong", r.v, r.err)
	}
}

// TestAcceptsUnknownTypes: only an actor spawned with AcceptUnknownTypes
// takes messages of unknown types; a missing one does not (a typed actor
// may be spawned under its name before the message is handed over).
func TestAcceptsUnknownTypes(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	typed := mustSpawn(t, s, "typed", func(c *Context) { c.Receive(On(func(int) {})) })
	open := mustSpawn(t, s, "open", func(c *Context) { c.Receive(Any(func(any) {})) }, AcceptUnknownTypes())
	if s.port.AcceptsUnknownTypes(typed) || !s.port.AcceptsUnknownTypes(open) || s.port.AcceptsUnknownTypes(mustRef(t, "me/nobody")) {
		t.Fatal("AcceptsUnknownTypes: want false, true, false")
	}
}
