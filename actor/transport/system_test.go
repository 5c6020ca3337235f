package transport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/actor/transport"
)

// sink is a Remote and GroupTransport that records what it is given.
type sink struct {
	sent   chan transport.Envelope
	joined chan string
}

func newSink() *sink {
	return &sink{sent: make(chan transport.Envelope, 16), joined: make(chan string, 16)}
}

func (k *sink) Deliver(to, from actor.Ref, msg any, corr uint64, reply bool) error {
	k.sent <- transport.Envelope{To: to, From: from, Msg: msg, Corr: corr, Reply: reply}
	return nil
}
func (k *sink) JoinGroup(group string) error                              { k.joined <- group; return nil }
func (k *sink) LeaveGroup(string)                                         {}
func (k *sink) PublishGroup(string, actor.Ref, any) error                 { return nil }
func (k *sink) AnnounceGroup(group string, member actor.Ref, joined bool) {}

func shutdown(t *testing.T, s *actor.System) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing arrived in 5 s")
		panic("unreachable")
	}
}

// TestNewSystemHandsTheTransportItsPort: the factory runs once, inside
// NewSystem, with the Port of the system NewSystem returns; what it
// returns is the system's Remote and group transport from the start.
func TestNewSystemHandsTheTransportItsPort(t *testing.T) {
	k := newSink()
	var port *transport.Port
	calls := 0
	s, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		calls++
		port = p
		return k, k, nil
	}, actor.WithPeer("me"))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	if calls != 1 || port == nil || port.System() != s || port.Peer() != "me" {
		t.Fatalf("factory called %d times with port %v (system %p, want %p)", calls, port, port.System(), s)
	}
	far, _ := actor.NewRef("far", "x")
	s.Send(far, "hi")
	if e := recv(t, k.sent); e.To != far || e.Msg != "hi" {
		t.Fatalf("the remote got %+v", e)
	}
	if _, err := s.Spawn("member", func(c *actor.Context) {
		if err := group.Join(c, "room"); err != nil {
			t.Error(err)
		}
		c.Receive(actor.Any(func(any) {}))
	}); err != nil {
		t.Fatal(err)
	}
	if g := recv(t, k.joined); g != "room" {
		t.Fatalf("the group transport was asked to join %q", g)
	}
	// And in: a message from the far peer reaches a local actor.
	got := make(chan any, 1)
	to, err := s.Spawn("in", func(c *actor.Context) { c.Receive(actor.Any(func(m any) { got <- m })) })
	if err != nil {
		t.Fatal(err)
	}
	port.Deliver(transport.Envelope{To: to, From: far, Msg: "from far"})
	if m := recv(t, got); m != "from far" {
		t.Fatalf("the actor got %v", m)
	}
}

// TestNewSystemFactoryFails: an error of the factory is NewSystem's, and
// no system is returned; a nil factory is refused.
func TestNewSystemFactoryFails(t *testing.T) {
	boom := errors.New("no transport today")
	s, err := transport.NewSystem(func(*transport.Port) (transport.Remote, transport.GroupTransport, error) {
		return nil, nil, boom
	})
	if !errors.Is(err, boom) || s != nil {
		t.Fatalf("NewSystem = %v, %v; want nil, %v", s, err, boom)
	}
	if s, err := transport.NewSystem(nil); !errors.Is(err, transport.ErrNoFactory) || s != nil {
		t.Fatalf("NewSystem(nil) = %v, %v; want ErrNoFactory", s, err)
	}
	// A factory that returns no transport makes a local system.
	s, err = transport.NewSystem(func(*transport.Port) (transport.Remote, transport.GroupTransport, error) { return nil, nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	far, _ := actor.NewRef("far", "x")
	s.Send(far, "hi")
	if s.DeadLetters() != 1 {
		t.Fatalf("%d dead letters, want the message to another peer", s.DeadLetters())
	}
}

// TestInboundChargesItsCredit: an Inbound with a Credit charges each
// message's Size until its actor handled it.
func TestInboundChargesItsCredit(t *testing.T) {
	var port *transport.Port
	s, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		port = p
		return nil, nil, nil
	}, actor.WithPeer("me"))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	release := make(chan struct{})
	got := make(chan any, 4)
	to, err := s.Spawn("in", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) { <-release; got <- m })))
	})
	if err != nil {
		t.Fatal(err)
	}
	far, _ := actor.NewRef("far", "x")
	cr := transport.NewCredit(0)
	in := port.NewInbound()
	in.SetCredit(cr)
	in.Add(&transport.Envelope{To: to, From: far, Msg: 1, Size: 100})
	in.Add(&transport.Envelope{To: to, From: far, Msg: 2, Size: 50})
	if in.Len() != 2 {
		t.Fatalf("Len %d after two Adds", in.Len())
	}
	in.Flush()
	if h := cr.Held(); h != 150 {
		t.Fatalf("held %d after the flush, want 150", h)
	}
	close(release)
	recv(t, got)
	recv(t, got)
	in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cr.WaitLow(ctx); err != nil {
		t.Fatalf("held %d once handled: %v", cr.Held(), err)
	}
}

// TestPortAccounts: the embedder's view through the Port — the edges
// that tie actors to a peer, the watches, the loops — and SystemName's
// '$' names.
func TestPortAccounts(t *testing.T) {
	k := newSink()
	var port *transport.Port
	s, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		port = p
		return k, nil, nil
	}, actor.WithPeer("me"), actor.WithLoops(2))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	if n := port.Loops().Len(); n != 2 {
		t.Fatalf("%d loops, want 2", n)
	}
	far, _ := actor.NewRef("far", "x")
	monitored := make(chan struct{})
	if _, err := s.Spawn("watcher", func(c *actor.Context) {
		c.Monitor(far)
		close(monitored)
		c.Receive(actor.Any(func(any) {}))
	}); err != nil {
		t.Fatal(err)
	}
	recv(t, monitored)
	if e := port.RemoteEdges("far"); e != 1 {
		t.Fatalf("%d edges to far, want the monitor", e)
	}
	if e := port.RemoteEdges("elsewhere"); e != 0 {
		t.Fatalf("%d edges to a peer nothing watches", e)
	}
	if w := port.RemoteWatches(); w != 0 {
		t.Fatalf("%d watches held by other peers, want 0", w)
	}
	if _, err := s.Spawn("$svc", func(*actor.Context) {}); err == nil {
		t.Fatal("a '$' name was spawned without SystemName")
	}
	if _, err := s.Spawn("$svc", func(*actor.Context) {}, transport.SystemName()); err != nil {
		t.Fatalf("SystemName: %v", err)
	}
}
