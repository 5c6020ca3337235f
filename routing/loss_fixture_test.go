package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// resetUserStream resets, on r's side, r's user stream to peer p.
func resetUserStream(t *testing.T, r *Router, p libp2ppeer.ID) {
	t.Helper()
	l, err := r.link(p.String())
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.streams {
		if !isCtl(s.Protocol()) {
			_ = s.Reset()
		}
	}
}

// on opens a stream of protocol proto from rf's host.
func (rf *rawFrames) on(to host.Host, proto protocol.ID) *rawFrames {
	rf.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := rf.h.NewStream(ctx, to.ID(), proto)
	if err != nil {
		rf.t.Fatal(err)
	}
	return &rawFrames{t: rf.t, h: rf.h, s: s, fw: codec.NewFrameWriter(s, 0), reg: rf.reg}
}

// serveCtl makes h, a raw peer, take the control streams a router opens
// to it, and reports the type of every envelope it reads on them.
func serveCtl(t *testing.T, h host.Host) <-chan string {
	t.Helper()
	return serveFrames(h, func(*codec.Envelope) bool { return true }, ProtoCtl, ProtoCtl10)
}

// serveFrames makes h, a raw peer, take the streams of protos a router
// opens to it, and reports the type of every envelope it reads on them
// that keep accepts (dropping those that find the channel full).
func serveFrames(h host.Host, keep func(*codec.Envelope) bool, protos ...protocol.ID) <-chan string {
	types := make(chan string, 64)
	handler := func(s network.Stream) {
		defer s.Close()
		fr := codec.NewFrameReader(s, 0, codec.WithCompact(isCompact(s.Protocol())))
		for {
			var env codec.Envelope
			if err := fr.ReadEnvelope(&env); err != nil {
				return
			}
			if !keep(&env) {
				continue
			}
			select {
			case types <- env.Type:
			default:
			}
		}
	}
	for _, p := range protos {
		h.SetStreamHandler(p, handler)
	}
	return types
}

// lossSink is an actor "sink" that monitors src when told "watch", and
// reports on events the strings it receives after that and the Downs.
func lossSink(t *testing.T, sys *actor.System, src actor.Ref, events chan<- string) {
	t.Helper()
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		var h []actor.Case
		h = []actor.Case{
			actor.On(func(m string) {
				if m == "watch" {
					c.Monitor(src)
					m = "watching"
				}
				events <- m
				c.Receive(h...)
			}),
			actor.On(func(d actor.Down) {
				events <- fmt.Sprintf("down: %v", errors.Is(d.Reason, actor.ErrNodeDown))
				c.Receive(h...)
			}),
		}
		c.Receive(h...)
	}); err != nil {
		t.Fatal(err)
	}
}

// wantEvents reads len(want) events and compares them with want, in order.
func wantEvents(t *testing.T, ctx context.Context, events <-chan string, want ...string) {
	t.Helper()
	for i, w := range want {
		if got := recvWithin(t, ctx, events); got != w {
			t.Fatalf("event %d: %q, want %q (all: %q)", i, got, w, want)
		}
	}
}

// lossFixture is a router B, with an actor "sink" (lossSink) that
// watches the actor "src" of a raw peer A, which has a control and a user
// stream open to B, both introduced, as a router's would be.
type lossFixture struct {
	ctx       context.Context
	hB        host.Host
	rB        *Router
	user, ctl *rawFrames    // A's streams
	ctlTypes  <-chan string // what B sends on its control stream to A
	events    chan string   // the sink's
}

func newLossFixture(t *testing.T) *lossFixture {
	t.Helper()
	return newLossFixtureTimed(t, timings{})
}

// newLossFixtureTimed is newLossFixture with B's router on timings tm.
func newLossFixtureTimed(t *testing.T, tm timings) *lossFixture {
	t.Helper()
	hB, rB, sysB := testRouterTimed(t, tm)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	f := &lossFixture{ctx: ctx, hB: hB, rB: rB, events: make(chan string, 16)}
	f.user = newRawFrames(t, hB)
	f.ctlTypes = serveCtl(t, f.user.h)
	src, _ := actor.NewRef(f.user.h.ID().String(), "src")
	lossSink(t, sysB, src, f.events)
	f.ctl = f.user.on(hB, ProtoCtl)
	f.ctl.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7, Stream: 1})
	f.user.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7, Stream: 2})
	f.user.send(codec.KindUser, "string", "watch")
	wantEvents(t, ctx, f.events, "watching")
	return f
}

// nextStream opens A's next user stream with a hello that announces loss
// lost, sends "after" on it, and returns once B's reader of it waits for a
// declaration; it fails if anything reaches the sink first.
func (f *lossFixture) nextStream(t *testing.T, lost uint64) *rawFrames {
	t.Helper()
	waiting := make(chan struct{})
	var once sync.Once
	f.rB.hooks.awaitLoss = func() { once.Do(func() { close(waiting) }) }
	next := f.user.another(f.hB)
	next.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7, Stream: 3, Lost: lost})
	next.send(codec.KindUser, "string", "after")
	select {
	case <-waiting:
	case ev := <-f.events:
		t.Fatalf("%q before the declaration came", ev)
	case <-f.ctx.Done():
		t.Fatal("the new stream's reader did not wait for the declaration")
	}
	return next
}
