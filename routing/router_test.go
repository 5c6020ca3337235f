package routing

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// A peer seen with a new incarnation has restarted: monitors on its old
// actors fire even before any disconnection is noticed.
func TestNewIncarnationFiresMonitors(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	restarts, err := h.EventBus().Subscribe(new(EvtPeerRestarted))
	if err != nil {
		t.Fatal(err)
	}
	defer restarts.Close()
	other := testhost.NewHost(t, libp2p.NoListenAddrs)
	remote, _ := actor.NewRef(other.ID().String(), "x")

	downs := make(chan actor.Down, 1)
	ready := make(chan struct{})
	if _, err := sys.Spawn("w", func(c *actor.Context) {
		c.Monitor(remote)
		close(ready)
		c.Receive(actor.On(func(d actor.Down) { downs <- d }))
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not start")
	}
	r.hello(other.ID(), 11, nil) // first contact: nothing fires
	r.hello(other.ID(), 11, nil) // same incarnation: nothing fires
	r.hello(other.ID(), 12, nil) // restarted
	select {
	case d := <-downs:
		if d.Ref != remote || !errors.Is(d.Reason, actor.ErrNodeDown) {
			t.Fatalf("down %+v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Down after a new incarnation")
	}
	select { // hello emits it before it returns
	case e := <-restarts.Out():
		if e.(EvtPeerRestarted).Peer != other.ID() {
			t.Fatalf("restart event %+v", e)
		}
	default:
		t.Fatal("no EvtPeerRestarted after a new incarnation")
	}
	select {
	case e := <-restarts.Out():
		t.Fatalf("a second restart event %+v", e)
	default:
	}
	if st := r.Stats(); st.PeersDown != 1 || st.RemoteIncarnated != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// closeWaiter is a connection whose Close blocks until release is closed.
type closeWaiter struct {
	network.Conn // only the methods below are called
	closing      chan struct{}
	release      chan struct{}
	closed       atomic.Bool
}

func (c *closeWaiter) Close() error {
	close(c.closing)
	<-c.release
	c.closed.Store(true)
	return nil
}

func (c *closeWaiter) IsClosed() bool { return c.closed.Load() }
func (c *closeWaiter) ID() string     { return "waiter" }

// A restarted peer's new connection announces its incarnation twice at
// once (identify, and the hello of a stream that carries an Ask): the
// second hello must not return, and the Ask be answered, while the first
// is still closing the connection of the former incarnation, where the
// answer would be lost.
func TestHelloWaitsForStaleConnectionsToClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &Router{
			log:     slog.New(slog.DiscardHandler),
			peers:   newPeerTable(network.Conn.IsClosed),
			closing: make(map[libp2ppeer.ID]chan struct{}),
		}
		id := libp2ppeer.ID("restarted")
		old := &closeWaiter{closing: make(chan struct{}), release: make(chan struct{})}
		r.peers.peers[id] = &peerState{conns: map[network.Conn]uint64{old: 11}}
		current := &closeWaiter{}
		go r.hello(id, 12, current) // identify: closes old
		<-old.closing
		returned := make(chan struct{})
		go func() {
			r.hello(id, 12, current) // the stream's hello
			close(returned)
		}()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("hello returned while the former incarnation's connection was still open")
		default:
		}
		close(old.release)
		synctest.Wait()
		select {
		case <-returned:
		default:
			t.Fatal("hello did not return once the stale connection closed")
		}
		if len(r.closing) != 0 {
			t.Fatalf("closing still holds %v", r.closing)
		}
	})
}

// An agent version announces an incarnation only in the form AgentVersion
// writes; anything else announces none.
func TestAgentVersionCarriesTheIncarnation(t *testing.T) {
	for _, inc := range []uint64{1, 0xdeadbeef, ^uint64(0)} {
		if got, ok := parseAgentVersion(AgentVersion(inc)); !ok || got != inc {
			t.Errorf("AgentVersion(%x) parses as %x, %v", inc, got, ok)
		}
	}
	for _, agent := range []string{
		"", "go-libp2p/0.52.0", "troupe/1", "troupe/1 incarnation/", "troupe/1 incarnation/0",
		"troupe/1 incarnation/xyz", "troupe/1 incarnation/1ffffffffffffffff", "other/1 incarnation/12",
	} {
		if inc, ok := parseAgentVersion(agent); ok {
			t.Errorf("%q announces incarnation %x", agent, inc)
		}
	}
}

// TestRouterNeedsItsSystem: a router is made with its system's Port, in
// the system's transport factory, or not at all (there is no router
// without a system to hand failures back to, and no second system); it
// carries messages at once, and refuses them once closed.
func TestRouterNeedsItsSystem(t *testing.T) {
	h := testhost.NewHost(t, libp2p.NoListenAddrs)
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := New(h, reg, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New without a port: %v, want ErrInvalidConfig", err)
	}
	var r *Router
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		if _, err := New(h, nil, p); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New without a registry: %v, want ErrInvalidConfig", err)
		}
		var err error
		r, err = newRouter(config{Host: h, Registry: reg, Port: p, Logger: slog.New(slog.DiscardHandler)})
		return r, nil, err
	}, actor.WithPeer(h.ID().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Shutdown(ctx)
	other := testhost.NewHost(t, libp2p.NoListenAddrs)
	to, _ := actor.NewRef(other.ID().String(), "x")
	if err := r.Deliver(to, actor.Ref{}, "hi", 0, false); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Deliver(to, actor.Ref{}, "hi", 0, false); !errors.Is(err, ErrClosed) || !errors.Is(err, actor.ErrClosed) {
		t.Fatalf("Deliver after Close: %v, want ErrClosed matching actor.ErrClosed", err)
	}
}

// A sender that found a peer's link just before the router closed gets
// ErrClosed: its message is not queued where no writer takes it.
func TestSendRacingCloseIsRefused(t *testing.T) {
	_, r, _ := testRouter(t, 0)
	other := testhost.NewHost(t, libp2p.NoListenAddrs)
	peerStr := other.ID().String()
	_ = other.Close()
	to, _ := actor.NewRef(peerStr, "x")
	if _, err := r.link(peerStr); err != nil {
		t.Fatal(err)
	}
	r.hooks.linkFound = func(*link) {
		r.hooks.linkFound = nil
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Error(err)
		}
	}
	if err := r.Deliver(to, actor.Ref{}, "m", 0, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("a message sent as the router closed: %v, want ErrClosed", err)
	}
}
