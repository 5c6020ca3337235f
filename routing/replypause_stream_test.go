package routing

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestReplyPausePausesAnAskerThatDoesNotRead: a raw peer asks an echo
// as fast as it can and never reads the user stream the replies come on.
// Once our link to it took no bytes for replyStall with its queue full,
// its user stream is left unread (counted, and announced on its control
// stream, which it does read): nothing more of it is received during the
// pause, our link queue to it stays within its bound, and an honest
// peer's asks of the same echo are answered fast throughout.
func TestReplyPausePausesAnAskerThatDoesNotRead(t *testing.T) {
	const linkQueue = 128
	hv, rv, sysV := testPeerTuned(t, config{LinkQueue: linkQueue, Logger: testutil.QuietLogger(),
		timings: timings{replyStall: 200 * time.Millisecond}}, nil)
	spawnEcho(t, sysV)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ha, noticed := askWithoutReading(t, ctx, hv, false)

	// The honest peer asks the echo throughout.
	hh, _, sysH := testRouter(t, 0)
	if err := hh.Connect(ctx, libp2ppeer.AddrInfo{ID: hv.ID(), Addrs: hv.Addrs()}); err != nil {
		t.Fatal(err)
	}
	echo, err := actor.NewRef(hv.ID().String(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	var lat []time.Duration
	ask := func() {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		t0 := time.Now()
		if _, err := sysH.Ask(actx, echo, 2); err != nil {
			t.Fatalf("honest ask: %v", err)
		}
		lat = append(lat, time.Since(t0))
		if q := rv.Stats().QueuedUser; q > 2*linkQueue { // the attacker's link and the honest one's
			t.Fatalf("%d messages wait in user link queues, bound %d each", q, linkQueue)
		}
	}

	testutil.Eventually(t, 10*time.Second, "the attacker paused", func() bool {
		ask()
		return rv.Stats().ReplyPaused > 0
	})
	testutil.Eventually(t, 5*time.Second, "the pause noticed on the control stream", noticed.Load)
	// Paused: nothing more of the attacker's is read (the grace is 5 s,
	// and our link to it takes no bytes: the pause lasts).
	counts := rv.countsOf(ha.ID())
	before := counts.received.Load()
	for range 20 {
		ask()
	}
	if after := counts.received.Load(); after != before {
		t.Fatalf("received %d more messages of the paused peer", after-before)
	}
	if st := rv.Stats(); st.ReplyPaused != 1 {
		t.Fatalf("paused %d times, want 1 (stats %+v)", st.ReplyPaused, st)
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("honest asks: %d, p50 %v, p99 %v, max %v; the attacker's messages received: %d", len(lat), p50, p99, lat[len(lat)-1], before)
	if p99 > time.Second {
		t.Fatalf("honest asks p99 %v", p99)
	}
}

// askWithoutReading starts a raw peer that asks the echo of hv as fast
// as it can and never reads the user streams hv opens to it; it reads
// its control stream, and noticed turns true once a pause notice came.
// With tell it first tells hv, on a control stream of its own, that it
// paused hv. It stops when the test ends.
func askWithoutReading(t *testing.T, ctx context.Context, hv host.Host, tell bool) (ha host.Host, noticed *atomic.Bool) {
	t.Helper()
	ha = testhost.NewHost(t, libp2p.NoListenAddrs)
	release := make(chan struct{})
	noticed = new(atomic.Bool)
	ha.SetStreamHandler(ProtoMsg, func(s network.Stream) { <-release; _ = s.Reset() })
	ha.SetStreamHandler(ProtoCtl, func(s network.Stream) {
		reg, _ := codec.NewRegistry()
		_ = registerWire(reg)
		fr := codec.NewFrameReader(s, codec.DefaultMaxFrame, codec.WithCompact(true))
		var env codec.Envelope
		for {
			msg, err := fr.ReadMessage(reg, &env)
			if err != nil {
				if fr.Err() != nil || errors.Is(err, io.EOF) {
					return
				}
				continue
			}
			if b, ok := msg.(pauseBody); ok && b.On {
				noticed.Store(true)
			}
		}
	})
	if err := ha.Connect(ctx, libp2ppeer.AddrInfo{ID: hv.ID(), Addrs: hv.Addrs()}); err != nil {
		t.Fatal(err)
	}
	reg, _ := codec.NewRegistry()
	_ = registerWire(reg)
	if tell {
		cs, err := ha.NewStream(ctx, hv.ID(), ProtoCtl)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Reset() })
		fw := codec.NewFrameWriter(cs, 0, codec.WithCompact(true))
		_, body, _ := reg.Encode(pauseBody{On: true})
		if fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, To: lossTo, Type: typePause, Body: body}) != nil || fw.Flush() != nil {
			t.Fatal("writing the pause notice")
		}
	}
	s, err := ha.NewStream(ctx, hv.ID(), ProtoMsg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after release and the stream's reset
	t.Cleanup(func() { close(release); _ = s.Reset() })
	wg.Go(func() {
		fw := codec.NewFrameWriter(s, 0, codec.WithCompact(true))
		_, body, _ := reg.Encode(1)
		for corr := uint64(1); ; corr++ {
			if fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "echo", FromName: "src", Type: "int", Corr: corr, Body: body}) != nil {
				return
			}
			if corr%64 == 0 && fw.Flush() != nil {
				return
			}
		}
	})
	return ha, noticed
}

// spawnEcho spawns an actor "echo" that answers every int with 1 KiB.
func spawnEcho(t *testing.T, sys *actor.System) {
	t.Helper()
	if _, err := sys.Spawn("echo", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(int) { c.Reply(make([]byte, 1<<10)); c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestReplyPauseBelievesAToldPauseForAGrace: a peer that told us it
// paused us is not paused while that lasts (a node told does not pause
// back: of two peers one at most is paused), but a claim is believed
// for the grace and a stall at most: the same raw peer, never reading
// its replies, is paused once it lapsed.
func TestReplyPauseBelievesAToldPauseForAGrace(t *testing.T) {
	const grace, stall = time.Second, 100 * time.Millisecond
	hv, rv, sysV := testPeerTuned(t, config{LinkQueue: 128, PauseGrace: grace, Logger: testutil.QuietLogger(),
		timings: timings{replyStall: stall}}, nil)
	spawnEcho(t, sysV)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Now()
	_, _ = askWithoutReading(t, ctx, hv, true)
	testutil.Eventually(t, 10*time.Second, "the attacker paused", func() bool { return rv.Stats().ReplyPaused > 0 })
	if d := time.Since(t0); d < grace {
		t.Fatalf("paused %v after it told us it paused us: want its claim believed for %v at least", d, grace)
	}
	if st := rv.Stats(); st.ReplyPausesHeard != 1 {
		t.Fatalf("%d notices believed, want 1", st.ReplyPausesHeard)
	}
}

// TestReplyPauseOutlivesThePeersStreams: a peer whose claims of pausing
// us used up their belief does not get it back by closing its streams
// and opening new ones: its budget, which holds its reply pause, is kept
// until the debt is forgiven. A peer with nothing to remember has its
// budget forgotten with its last stream, as before.
func TestReplyPauseOutlivesThePeersStreams(t *testing.T) {
	_, r, _ := testRouter(t, 0)
	liar, other := testhost.NewPeerID(t), testhost.NewPeerID(t)
	b := r.budgetFor(liar)
	// A claim believed for the grace and a stall, lapsed just now.
	b.pause.mu.Lock()
	b.pause.st.heard(true, time.Now().Add(-(r.cfg.PauseGrace + r.cfg.timings.replyStall)))
	b.pause.mu.Unlock()
	r.budgetDone(liar, b)
	again := r.budgetFor(liar)
	defer r.budgetDone(liar, again)
	if again != b {
		t.Fatal("the liar's budget, with the debt of its claims, was forgotten with its streams")
	}
	r.pauseHeard(liar, again, pauseBody{On: true})
	if n := r.Stats().ReplyPausesHeard; n != 0 {
		t.Fatalf("%d claims believed on the new streams, want none (the debt is a grace and more)", n)
	}

	ob := r.budgetFor(other)
	r.budgetDone(other, ob)
	fresh := r.budgetFor(other)
	defer r.budgetDone(other, fresh)
	if fresh == ob {
		t.Fatal("a peer with nothing to remember kept its budget after its last stream")
	}
}
