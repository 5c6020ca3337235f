package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

func TestRemoteAskReplyAndSend(t *testing.T) {
	a, b := pair(t)
	echoRef := spawn(t, b, "echo", echo)
	ctx, cancel := askCtx()
	defer cancel()
	v, err := a.System().Ask(ctx, echoRef, Ping{7})
	if err != nil || v != (Pong{7}) {
		t.Fatalf("remote ask: %v, %v", v, err)
	}
	// Actor to actor, continuation-style ask, with the sender's Ref.
	got := make(chan any, 1)
	spawn(t, a, "asker", func(c *actor.Context) {
		c.Ask(echoRef, Ping{8}, 5*time.Second, func(r any, err error) {
			if err != nil {
				got <- err
				return
			}
			got <- r
		})
	})
	if r := recv(t, got); r != (Pong{8}) {
		t.Fatalf("actor ask: %v", r)
	}
	// Plain send, sender visible on the other side.
	senders := make(chan actor.Ref, 1)
	sink := spawn(t, b, "sink", func(c *actor.Context) {
		c.Receive(actor.On(func(Ping) { senders <- c.Sender() }))
	})
	from := spawn(t, a, "from", func(c *actor.Context) { c.Send(sink, Ping{1}) })
	if s := recv(t, senders); s != from {
		t.Fatalf("sender %v, want %v", s, from)
	}
}

func TestRemoteUnknownActorFailsFast(t *testing.T) {
	a, b := pair(t)
	ghost, _ := peer.Ref(b.ID(), "ghost")
	ctx, cancel := askCtx()
	defer cancel()
	start := time.Now()
	if _, err := a.System().Ask(ctx, ghost, Ping{1}); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("ask ghost: %v, want ErrNoSuchActor", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("unknown actor took %v to fail", el)
	}
}

func TestRemoteOversizeRefusedAtSender(t *testing.T) {
	a, b := newNode(t, peer.WithMaxFrame(64<<10)), newNode(t)
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	echoRef := spawn(t, b, "echo", echo)
	_, err := a.System().Ask(ctx, echoRef, Blob{Data: make([]byte, 100<<10)})
	if !errors.Is(err, routing.ErrTooLarge) {
		t.Fatalf("oversize ask: %v, want ErrTooLarge", err)
	}
	// Beyond the codec's own limits (1 MiB strings) the body does not even
	// encode; that too is an error at the sender.
	if _, err := a.System().Ask(ctx, echoRef, Blob{Data: make([]byte, 5<<20)}); err == nil {
		t.Fatal("5 MiB message accepted")
	}
	if a.Router().Stats().TooLarge != 1 {
		t.Fatalf("stats %+v", a.Router().Stats())
	}
	// SendCtx, which returns once the message is queued, refuses what the
	// link would refuse before queueing it: the caller gets the error, and
	// no dead letter follows.
	letters := a.System().DeadLetters()
	if err := a.SendCtx(ctx, echoRef, Blob{Data: make([]byte, 100<<10)}); !errors.Is(err, routing.ErrTooLarge) {
		t.Fatalf("oversize SendCtx: %v, want ErrTooLarge", err)
	}
	if err := a.SendCtx(ctx, echoRef, struct{ Unregistered int }{}); !errors.Is(err, codec.ErrUnregistered) {
		t.Fatalf("SendCtx of an unregistered type: %v, want codec.ErrUnregistered", err)
	}
	if st := a.Router().Stats(); st.TooLarge != 2 || a.System().DeadLetters() != letters {
		t.Fatalf("stats %+v, %d dead letters, %d before the SendCtx calls", st, a.System().DeadLetters(), letters)
	}
	// The link still works.
	if v, err := a.System().Ask(ctx, echoRef, Ping{2}); err != nil || v != (Pong{2}) {
		t.Fatalf("ask after oversize: %v %v", v, err)
	}
}

// SendCtx counts the whole frame, names included, against the maximum: a
// body just under it is refused too when the frame it makes is over.
func TestSendCtxCountsTheWholeFrame(t *testing.T) {
	const maxFrame = 2048
	a, b := newNode(t, peer.WithMaxFrame(maxFrame)), newNode(t)
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	echoRef := spawn(t, b, "echo", echo)
	if err := a.SendCtx(ctx, echoRef, Blob{Data: make([]byte, maxFrame-20)}); !errors.Is(err, routing.ErrTooLarge) {
		t.Fatalf("SendCtx of a frame just over the maximum: %v, want ErrTooLarge", err)
	}
	if err := a.SendCtx(ctx, echoRef, Blob{Data: make([]byte, maxFrame-200)}); err != nil {
		t.Fatalf("SendCtx of a frame under the maximum: %v", err)
	}
	waitFor(t, func() bool { return a.Router().Stats().Sent == 1 })
	if st := a.Router().Stats(); st.TooLarge != 1 || a.System().DeadLetters() != 0 {
		t.Fatalf("stats %+v, %d dead letters", st, a.System().DeadLetters())
	}
}

// TestMessagesAsLargeAsTheMaxFrame: with a maximum frame beyond what
// libp2p's default limits let a stream's reader hold (16 MiB a stream and
// a peer on a protocol; the reader is charged for a message it
// reassembles), a 20 MiB message still goes both ways: the node raises
// those limits to fit its maximum frame.
func TestMessagesAsLargeAsTheMaxFrame(t *testing.T) {
	const maxFrame, size = 24 << 20, 20 << 20
	big := func() []peer.Option {
		lim := codec.DefaultLimits()
		lim.MaxStringLen = maxFrame
		return []peer.Option{peer.WithMaxFrame(maxFrame), peer.WithRegistry(registry(t, codec.WithLimits(lim)))}
	}
	a, b := newNode(t, big()...), newNode(t, big()...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	mirror := spawn(t, b, "mirror", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(m Blob) { c.Reply(m); c.Receive(h) })
		c.Receive(h)
	})
	data := make([]byte, size)
	data[size-1] = 7
	v, err := a.System().Ask(ctx, mirror, Blob{Data: data})
	if err != nil {
		t.Fatalf("ask with a 20 MiB message: %v (stats %+v, %+v)", err, a.Router().Stats(), b.Router().Stats())
	}
	if m, ok := v.(Blob); !ok || len(m.Data) != size || m.Data[size-1] != 7 {
		t.Fatalf("reply is not the message sent")
	}
	if st := b.Router().Stats(); st.StreamsReset != 0 {
		t.Fatalf("%d streams reset", st.StreamsReset)
	}
}

// TestRemoteWatchLimit: a node caps the monitors one peer's actors hold
// on its actors; a monitor beyond the cap comes back at once as a Down
// whose reason is actor.ErrSystemLimit, across the wire.
func TestRemoteWatchLimit(t *testing.T) {
	a, b := newNode(t), newNode(t, peer.WithActorOptions(transport.WithRemoteWatchLimit(1)))
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	far1, far2 := spawn(t, b, "far1", echo), spawn(t, b, "far2", echo, actor.AcceptRemoteLinks())
	downs := make(chan actor.Down, 2)
	spawn(t, a, "watcher", func(c *actor.Context) {
		c.Monitor(far1)
		c.Monitor(far2)
		c.Receive(actor.On(func(d actor.Down) { downs <- d }))
	})
	// The two targets handle their monitors on their own loops: either
	// may come second.
	d := recv(t, downs)
	if (d.Ref != far1 && d.Ref != far2) || !errors.Is(d.Reason, actor.ErrSystemLimit) {
		t.Fatalf("down %+v, want one of far1's or far2's with ErrSystemLimit", d)
	}
}

func TestRemoteMonitorAndLink(t *testing.T) {
	a, b := pair(t)
	victim := spawn(t, b, "victim", func(c *actor.Context) {
		c.Receive(actor.On(func(m Crash) { c.Exit(errors.New(m.Why)) }))
	}, actor.AcceptRemoteLinks())
	downs := make(chan actor.Down, 1)
	exits := make(chan actor.Exit, 1)
	ready := make(chan struct{})
	spawn(t, a, "watcher", func(c *actor.Context) {
		c.TrapExit(true)
		c.Monitor(victim)
		c.Link(victim)
		close(ready)
		c.Receive(actor.On(func(d actor.Down) {
			downs <- d
			c.Receive(actor.On(func(e actor.Exit) { exits <- e }))
		}))
	})
	recv(t, ready)
	// Signals travel on the control stream, the crash on the user stream:
	// wait until b received the hello, the monitor and the link, or the
	// crash could overtake them (the Down would then say ErrNoSuchActor).
	waitFor(t, func() bool { return b.Router().Stats().Received >= 3 })
	a.System().Send(victim, Crash{"bad day"})
	d := recv(t, downs)
	if d.Ref != victim || d.Reason == nil || !strings.Contains(d.Reason.Error(), "bad day") {
		t.Fatalf("down %+v", d)
	}
	e := recv(t, exits)
	if e.From != victim || e.Reason == nil {
		t.Fatalf("exit %+v", e)
	}
}

// waitFor polls cond, for conditions no event announces (a counter on
// another node), failing after 10 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, cond)
}

// waitWithin polls cond until it holds, failing t if it does not within d.
func waitWithin(t testing.TB, d time.Duration, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, d, "the condition of "+t.Name(), cond)
}

func TestLookupAndRemoteSpawn(t *testing.T) {
	a, b := pair(t)
	spawn(t, b, "known", echo)
	ctx, cancel := askCtx()
	defer cancel()
	ref, err := a.Lookup(ctx, b.ID(), "known")
	if err != nil || ref.Name() != "known" || ref.Peer() != b.ID().String() {
		t.Fatalf("lookup: %v %v", ref, err)
	}
	if _, err := a.Lookup(ctx, b.ID(), "unknown"); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("lookup unknown: %v", err)
	}
	err = b.RegisterBehavior("greeter", func(args any) (actor.Behavior, error) {
		g, ok := args.(string)
		if !ok {
			return nil, errors.New("greeter wants a string")
		}
		return func(c *actor.Context) {
			var h actor.Case
			h = actor.On(func(p Ping) { c.Reply(Greeting{g}); c.Receive(h) })
			c.Receive(h)
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.SpawnRemote(ctx, b.ID(), "greeter", "remote.greeter-1", "hello from b")
	if err != nil || g.Peer() != b.ID().String() || g.Name() != "remote.greeter-1" {
		t.Fatalf("spawn remote: %v %v", g, err)
	}
	if v, err := a.System().Ask(ctx, g, Ping{1}); err != nil || v != (Greeting{"hello from b"}) {
		t.Fatalf("ask spawned actor: %v %v", v, err)
	}
	// Errors come back across the wire as their sentinels, on either node.
	for _, on := range []*peer.Node{a, b} {
		if _, err := on.SpawnRemote(ctx, b.ID(), "nope", "", 1); !errors.Is(err, peer.ErrUnknownBehavior) || !strings.Contains(err.Error(), `"nope"`) {
			t.Fatalf("unknown behavior: %v", err)
		}
		if _, err := on.SpawnRemote(ctx, b.ID(), "greeter", "remote.greeter-1", "again"); !errors.Is(err, actor.ErrNameTaken) {
			t.Fatalf("a name taken: %v", err)
		}
		if _, err := on.SpawnRemote(ctx, b.ID(), "greeter", "bad/name", "x"); !errors.Is(err, actor.ErrInvalidName) {
			t.Fatalf("an invalid name: %v", err)
		}
		if _, err := on.SpawnRemote(ctx, b.ID(), "greeter", "", 42); err == nil || !strings.Contains(err.Error(), "greeter wants a string") {
			t.Fatalf("a factory's error: %v", err)
		}
	}
}
