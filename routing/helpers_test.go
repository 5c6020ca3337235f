package routing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// Test fixtures: routers on loopback hosts, two peers with actors, raw
// frames written to a router as a hostile or older peer would, a sink.

// testRouter starts a host on 127.0.0.1 with a Router and an actor system,
// all closed when the test ends.
func testRouter(t *testing.T, maxFrame int) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testRouterLogging(t, maxFrame, testutil.QuietLogger())
}

// testRouterTimed is testRouter with the router's timings tm (zero fields:
// the defaults).
func testRouterTimed(t *testing.T, tm timings) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testPeerTuned(t, config{Logger: testutil.QuietLogger(), timings: tm}, nil)
}

// testRouterLogging is testRouter with the logger given.
func testRouterLogging(t *testing.T, maxFrame int, logger *slog.Logger) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testRouterHost(t, maxFrame, logger)
}

// testRouterHost is testRouterLogging with more options for the host.
func testRouterHost(t *testing.T, maxFrame int, logger *slog.Logger, opts ...libp2p.Option) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testPeer(t, maxFrame, logger, opts...)
}

// testPeer is a host with a Router bound to an actor system, as
// peer.Node assembles them (without groups: routing/groups has its own
// fixtures).
func testPeer(t *testing.T, maxFrame int, logger *slog.Logger, opts ...libp2p.Option) (host.Host, *Router, *actor.System) {
	t.Helper()
	return testPeerTuned(t, config{MaxFrame: maxFrame, Logger: logger}, nil, opts...)
}

// testPeerTuned is testPeer with the router's config base (its host,
// registry and port are filled in) and more options for the actor
// system.
func testPeerTuned(t *testing.T, base config, sysOpts []actor.Option, opts ...libp2p.Option) (host.Host, *Router, *actor.System) {
	t.Helper()
	h := testhost.NewHost(t, opts...)
	r, sys := testPeerOn(t, h, base, sysOpts)
	return h, r, sys
}

// testPeerOn is testPeerTuned on host h (a test's wrapper of one), which
// the test closes.
func testPeerOn(t *testing.T, h host.Host, base config, sysOpts []actor.Option) (*Router, *actor.System) {
	t.Helper()
	logger := base.Logger
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	sysOpts = append([]actor.Option{actor.WithPeer(h.ID().String()), actor.WithLogger(logger)}, sysOpts...)
	var r *Router
	sys, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		base.Host, base.Registry, base.Port = h, reg, p
		var err error
		if r, err = newRouter(base); err != nil {
			return nil, nil, err
		}
		return r, nil, nil
	}, sysOpts...)
	if err != nil {
		if r != nil {
			_ = r.Close(context.Background())
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
		_ = r.Close(ctx) // then NewHost's cleanup closes h
	})
	return r, sys
}

// rawFrames writes envelopes on a raw stream of the message protocol.
type rawFrames struct {
	t   *testing.T
	h   host.Host // the host the stream is from
	s   network.Stream
	fw  *codec.FrameWriter
	reg *codec.Registry
}

func newRawFrames(t *testing.T, to host.Host) *rawFrames {
	t.Helper()
	return newRawFramesOn(t, to, ProtoMsg)
}

// newRawFramesOn is newRawFrames on a stream of protocol proto.
func newRawFramesOn(t *testing.T, to host.Host, proto protocol.ID) *rawFrames {
	t.Helper()
	other := testhost.NewHost(t, libp2p.NoListenAddrs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := other.Connect(ctx, libp2ppeer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
	s, err := other.NewStream(ctx, to.ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := registerWire(reg); err != nil {
		t.Fatal(err)
	}
	return &rawFrames{t: t, h: other, s: s, fw: codec.NewFrameWriter(s, 0), reg: reg}
}

// another opens another stream of the same protocol from rf's host.
func (rf *rawFrames) another(to host.Host) *rawFrames {
	rf.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := rf.h.NewStream(ctx, to.ID(), rf.s.Protocol())
	if err != nil {
		rf.t.Fatal(err)
	}
	return &rawFrames{t: rf.t, h: rf.h, s: s, fw: codec.NewFrameWriter(s, 0), reg: rf.reg}
}

// send writes one envelope of v to actor "sink" and flushes.
func (rf *rawFrames) send(kind codec.Kind, typ string, v any) {
	rf.t.Helper()
	rf.write(kind, typ, v)
	rf.flush()
}

// write buffers one envelope of v to actor "sink" without flushing, so
// that frames the other side may answer with a reset go out in one write.
func (rf *rawFrames) write(kind codec.Kind, typ string, v any) {
	rf.t.Helper()
	_, body, err := rf.reg.Encode(v)
	if err != nil {
		rf.t.Fatal(err)
	}
	if err := rf.fw.WriteEnvelope(&codec.Envelope{Kind: kind, To: "sink", FromName: "src", Type: typ, Body: body}); err != nil {
		rf.t.Fatal(err)
	}
}

// flush sends what write buffered.
func (rf *rawFrames) flush() {
	rf.t.Helper()
	if err := rf.fw.Flush(); err != nil {
		rf.t.Fatal(err)
	}
}

func (rf *rawFrames) fragment(f fragmentBody) {
	rf.t.Helper()
	rf.send(codec.KindSystem, typeFragment, f)
}

// reset reports whether the other side reset the stream within 5 s.
func (rf *rawFrames) reset() bool {
	_ = rf.s.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rf.s.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "deadline")
}

// closed reports whether the other side closed the stream (not reset it)
// within 5 s.
func (rf *rawFrames) closed() bool {
	_ = rf.s.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rf.s.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

// spawnSink spawns an actor "sink" that passes on every message it gets.
func spawnSink(t *testing.T, sys *actor.System) <-chan any {
	t.Helper()
	got := make(chan any, 4)
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) { got <- m; c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	return got
}
