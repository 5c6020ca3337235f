package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
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
	a, b := newNode(t), newNode(t, peer.WithActorOptions(actor.WithRemoteWatchLimit(1)))
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

// watchFar spawns an actor "far" on b and an actor on a that monitors it,
// and returns far's Ref and the Downs a's actor gets, once b has the
// monitor.
func watchFar(t *testing.T, a, b *peer.Node) (actor.Ref, <-chan actor.Down) {
	t.Helper()
	far := spawn(t, b, "far", echo)
	downs := monitor(t, a, far)
	waitFor(t, func() bool { return b.Router().Stats().Received >= 2 })
	return far, downs
}

func TestNodeDownWithinOneSecondOfClose(t *testing.T) {
	a, b := pair(t)
	_, downs := watchFar(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d := recv(t, downs)
	if el := time.Since(start); el > time.Second {
		t.Fatalf("Down came %v after Close", el)
	}
	// b's actors were shut down first, so the Down may say so; or the
	// disconnection got there first.
	if !errors.Is(d.Reason, actor.ErrNodeDown) && !errors.Is(d.Reason, actor.ErrShutdown) {
		t.Fatalf("down reason %v", d.Reason)
	}
	// Either way a sees the node go down within the second.
	waitWithin(t, time.Second-time.Since(start), func() bool { return a.Router().Stats().PeersDown == 1 })
}

// When the connection dies without a word from the peer (its host closes,
// as in a crash), the peer's actors cannot send their Downs: the
// disconnection alone turns every monitor of them into Down{NodeDown}
// within a second.
func TestNodeDownWhenTheConnectionDies(t *testing.T) {
	a, b := pair(t)
	far, downs := watchFar(t, a, b)
	start := time.Now()
	if err := b.Host().Close(); err != nil {
		t.Fatal(err)
	}
	d := recv(t, downs)
	if el := time.Since(start); el > time.Second {
		t.Fatalf("Down came %v after the connection died", el)
	}
	if !errors.Is(d.Reason, actor.ErrNodeDown) || d.Ref != far {
		t.Fatalf("down %+v, want %v with ErrNodeDown", d, far)
	}
}

// The disconnection fires every edge to the departed peer's actors, not
// only the first: two monitors of one actor, a monitor of another, and a
// link (an exit signal of ErrNodeDown to an actor that traps exits).
func TestNodeDownFiresEveryMonitorAndLink(t *testing.T) {
	a, b := pair(t)
	far1, far2 := spawn(t, b, "far1", echo), spawn(t, b, "far2", echo, actor.AcceptRemoteLinks())
	downs := make(chan actor.Down, 3)
	exits := make(chan actor.Exit, 1)
	ready := make(chan struct{}, 2)
	spawn(t, a, "watcher", func(c *actor.Context) {
		c.Monitor(far1)
		c.Monitor(far1)
		c.Monitor(far2)
		ready <- struct{}{}
		var h actor.Case
		h = actor.On(func(d actor.Down) { downs <- d; c.Receive(h) })
		c.Receive(h)
	})
	spawn(t, a, "linked", func(c *actor.Context) {
		c.TrapExit(true)
		c.Link(far2)
		ready <- struct{}{}
		c.Receive(actor.On(func(e actor.Exit) { exits <- e }))
	})
	recv(t, ready)
	recv(t, ready)
	if err := b.Host().Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[actor.Ref]int{}
	for range 3 {
		d := recv(t, downs)
		if !errors.Is(d.Reason, actor.ErrNodeDown) {
			t.Fatalf("down %+v, want ErrNodeDown", d)
		}
		seen[d.Ref]++
	}
	if seen[far1] != 2 || seen[far2] != 1 {
		t.Fatalf("downs per actor %v, want far1 twice and far2 once", seen)
	}
	if e := recv(t, exits); e.From != far2 || !errors.Is(e.Reason, actor.ErrNodeDown) {
		t.Fatalf("exit %+v, want one from %v with ErrNodeDown", e, far2)
	}
}

func TestAsksFailWhenThePeerGoesAway(t *testing.T) {
	a, b := pair(t)
	asked := make(chan struct{}, 2)
	silent := spawn(t, b, "silent", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(any) { asked <- struct{}{}; c.Receive(h) }) // never replies
		c.Receive(h)
	})
	errs := make(chan error, 2)
	spawn(t, a, "asker", func(c *actor.Context) {
		c.Ask(silent, "from an actor", time.Hour, func(_ any, err error) { errs <- err })
	})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		_, err := a.System().Ask(ctx, silent, "from plain code")
		errs <- err
	}()
	recv(t, asked)
	recv(t, asked)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := recv(t, errs); !errors.Is(err, actor.ErrNodeDown) {
			t.Fatalf("ask: %v, want ErrNodeDown", err)
		}
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("asks failed %v after Close", el)
	}
}

func TestMillionMessagesInOrder(t *testing.T) {
	total := 1_000_000
	if testing.Short() || raceEnabled {
		total = 100_000
	}
	const window = 10_000
	a, b := pair(t)
	result := make(chan error, 1)
	sink := spawn(t, b, "sink", batchSink(total, window, result))
	acked := make(chan struct{})
	spawn(t, a, "source", batchSource(sink, total, window, acked))
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("timed out; stats a=%+v b=%+v", a.Router().Stats(), b.Router().Stats())
	}
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		t.Fatal("the last Ack did not reach the source")
	}
	if dl := a.System().DeadLetters(); dl != 0 {
		t.Fatalf("%d dead letters on the sender", dl)
	}
}

// batchSink expects Batch{0} to Batch{total-1} in order, replies Ack{n}
// after every window, and reports on result once all came, or at the
// first missing or reordered one.
func batchSink(total, window int, result chan<- error) actor.Behavior {
	return func(c *actor.Context) {
		next := 0
		var h actor.Case
		h = actor.On(func(m Batch) {
			if m.Seq != next {
				result <- errors.New("out of order or missing")
				return
			}
			next++
			if next%window == 0 {
				c.Reply(Ack{next})
			}
			if next == total {
				result <- nil
				return
			}
			c.Receive(h)
		})
		c.Receive(h)
	}
}

// batchSource sends total Batches to sink, a window at a time, the next
// window on each Ack, and closes acked on the last Ack.
func batchSource(sink actor.Ref, total, window int, acked chan<- struct{}) actor.Behavior {
	return func(c *actor.Context) {
		sent := 0
		var burst func()
		burst = func() {
			for range window {
				c.Send(sink, Batch{sent})
				sent++
			}
			if sent == total { // the last Ack comes too: wait for it
				c.Receive(actor.On(func(Ack) { close(acked) }))
				return
			}
			c.Receive(actor.On(func(Ack) { burst() }))
		}
		burst()
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
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(time.Millisecond)
	}
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
	g, err := a.SpawnRemote(ctx, b.ID(), "greeter", "greeter-1", "hello from b")
	if err != nil || g.Peer() != b.ID().String() || g.Name() != "greeter-1" {
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
		if _, err := on.SpawnRemote(ctx, b.ID(), "greeter", "greeter-1", "again"); !errors.Is(err, actor.ErrNameTaken) {
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

// TestSignalsToAnUnreachablePeerFire: a monitor or link of an actor on a
// peer that cannot be reached fires, as Erlang's do with noconnection,
// rather than waiting for ever; an Ask fails.
func TestSignalsToAnUnreachablePeerFire(t *testing.T) {
	a := newNode(t)
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	nowhere, _ := libp2ppeer.IDFromPublicKey(pub) // a peer no one knows an address of
	far, err := peer.Ref(nowhere, "x")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan any, 2)
	spawn(t, a, "watcher", func(c *actor.Context) {
		c.TrapExit(true)
		c.Monitor(far)
		c.Link(far)
		var h actor.Case
		h = actor.Any(func(m any) { got <- m; c.Receive(h) })
		c.Receive(h)
	})
	var down, exit bool
	for range 2 {
		switch m := recv(t, got).(type) {
		case actor.Down:
			down = m.Ref == far && errors.Is(m.Reason, routing.ErrUnreachable)
		case actor.Exit:
			exit = m.From == far && errors.Is(m.Reason, routing.ErrUnreachable)
		default:
			t.Fatalf("unexpected %T %v", m, m)
		}
	}
	if !down || !exit {
		t.Fatalf("down=%v exit=%v, want both with ErrUnreachable", down, exit)
	}
	ctx, cancel := askCtx()
	defer cancel()
	if _, err := a.System().Ask(ctx, far, Ping{1}); !errors.Is(err, routing.ErrUnreachable) {
		t.Fatalf("ask: %v, want ErrUnreachable", err)
	}
}

// TestAskOnABrokenStreamFailsAtOnce: a peer that resets every stream of
// the message protocol (the connection stays up). A request written into
// a stream the peer already reset comes back to its asker at once with
// ErrStreamBroken instead of waiting for its timeout.
func TestAskOnABrokenStreamFailsAtOnce(t *testing.T) {
	a, b := pair(t)
	far := spawn(t, b, "echo", echo)
	resets := make(chan struct{}, 100)
	for _, p := range []protocol.ID{routing.ProtoMsg, routing.ProtoMsg10} {
		b.Host().SetStreamHandler(p, func(s network.Stream) {
			_ = s.Reset()
			resets <- struct{}{}
		})
	}
	// Each Ask either goes into a new stream, which the peer resets after
	// it was written (the Ask then times out), or into the stream it
	// reset before (the Ask fails at once).
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		_, err := a.System().Ask(ctx, far, Ping{attempt})
		cancel()
		if errors.Is(err, routing.ErrStreamBroken) {
			if el := time.Since(start); el > 500*time.Millisecond {
				t.Fatalf("the Ask failed after %v", el)
			}
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("attempt %d: %v, want ErrStreamBroken or a timeout", attempt, err)
		}
		if attempt == 5 {
			t.Fatal("no Ask met a broken stream")
		}
		recv(t, resets) // that stream is reset now
	}
}

// TestRestartedPeerIsANewNode: a peer that restarts with the same identity
// is a new node. A Ref to one of its former unnamed actors reaches no
// actor, even though the new incarnation spawned as many unnamed actors
// as the old one; a Ref by an application-chosen name reaches the new
// actor of that name, as an Erlang registered name does.
func TestRestartedPeerIsANewNode(t *testing.T) {
	key, _ := newKey(t)
	a := newNode(t)
	start := func() (*peer.Node, actor.Ref) {
		b := newNode(t, peer.WithIdentity(key))
		ctx, cancel := askCtx()
		defer cancel()
		if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		spawn(t, b, "svc", echo)
		return b, spawn(t, b, "", echo)
	}
	b1, old := start()
	svc, _ := peer.Ref(b1.ID(), "svc")
	ctx, cancel := askCtx()
	defer cancel()
	if v, err := a.System().Ask(ctx, old, Ping{1}); err != nil || v != (Pong{1}) {
		t.Fatalf("ask the first incarnation: %v, %v", v, err)
	}
	if err := b1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, renewed := start()
	if renewed == old {
		t.Fatalf("the new incarnation's unnamed actor got the old one's name %v", old)
	}
	if v, err := a.System().Ask(ctx, old, Ping{2}); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("ask a former actor of a restarted peer: %v, %v; want ErrNoSuchActor", v, err)
	}
	if v, err := a.System().Ask(ctx, svc, Ping{3}); err != nil || v != (Pong{3}) {
		t.Fatalf("ask by name after the restart: %v, %v", v, err)
	}
}

// Plain code's remote Asks write their request on the asker's goroutine
// when the link's writer sleeps (routing.Router.DeliverDirect). Mixed with
// an actor's stream of sends and with other askers on the same link,
// nothing is lost, duplicated or reordered, and nothing waits for a
// wake-up that never comes.
func TestPlainAsksWriteThroughAlongsideSends(t *testing.T) {
	a, b := pair(t)
	echoRef := spawn(t, b, "echo", echo)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One asker alone: the writer sleeps between round trips, so the
	// requests are written through.
	for i := range 50 {
		if v, err := a.System().Ask(ctx, echoRef, Ping{i}); err != nil || v != (Pong{i}) {
			t.Fatalf("ask %d: %v, %v", i, v, err)
		}
	}
	through := a.Router().Stats().WrittenThrough
	if through == 0 {
		t.Fatalf("no request written through: %+v", a.Router().Stats())
	}
	// These Asks leave the write to the writer: one with less than a
	// second left (a write its deadline cut short would break the stream
	// for all), and one whose context can be cancelled but has no deadline
	// (a cancellation must end the Ask at once, and could not end a write).
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"short", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 900*time.Millisecond) }},
		{"cancellable", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
	} {
		for i := range 5 {
			actx, cancel := c.ctx()
			v, err := a.System().Ask(actx, echoRef, Ping{i})
			cancel()
			if err != nil || v != (Pong{i}) {
				t.Fatalf("%s ask %d: %v, %v", c.name, i, v, err)
			}
		}
		if got := a.Router().Stats().WrittenThrough; got != through {
			t.Fatalf("%d %s asks written through", got-through, c.name)
		}
	}
	// One that can never end (context.Background) is written through.
	if v, err := a.System().Ask(context.Background(), echoRef, Ping{7}); err != nil || v != (Pong{7}) {
		t.Fatalf("ask without a deadline: %v, %v", v, err)
	}
	if got := a.Router().Stats().WrittenThrough; got != through+1 {
		t.Fatalf("%d asks that cannot end written through, want 1", got-through)
	}
	// Four askers and an actor's windowed stream of sends at once.
	total, window := 40_000, 2_000
	if raceEnabled {
		total = 10_000
	}
	result := make(chan error, 1)
	sink := spawn(t, b, "sink", batchSink(total, window, result))
	acked := make(chan struct{})
	spawn(t, a, "source", batchSource(sink, total, window, acked))
	askErrs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range 300 {
				n := g*1000 + i
				v, err := a.System().Ask(ctx, echoRef, Ping{n})
				if err != nil || v != (Pong{n}) {
					askErrs <- fmt.Errorf("asker %d, ask %d: %v, %v", g, i, v, err)
					return
				}
			}
			askErrs <- nil
		}()
	}
	for range 4 {
		if err := recv(t, askErrs); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatalf("sends timed out; stats a=%+v b=%+v", a.Router().Stats(), b.Router().Stats())
	}
	recv(t, acked)
	if dl := a.System().DeadLetters(); dl != 0 {
		t.Fatalf("%d dead letters on the asking side", dl)
	}
}

// TestWhereisIsNotHeldUpBySilentPeers: Whereis asks the connected peers
// at the same time, so peers that never answer do not keep it from the
// one that has the actor.
func TestWhereisIsNotHeldUpBySilentPeers(t *testing.T) {
	a, b := newNode(t), newNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 3 { // hosts that take the control protocol and never answer
		h := testhost.NewHost(t)
		for _, p := range []protocol.ID{routing.ProtoCtl, routing.ProtoCtl10} {
			h.SetStreamHandler(p, func(s network.Stream) { _, _ = io.Copy(io.Discard, s) })
		}
		if err := a.Connect(ctx, libp2ppeer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	want := spawn(t, b, "wanted", echo)
	start := time.Now()
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if got, err := a.Whereis(short, "wanted"); err != nil || got != want || time.Since(start) > 4*time.Second {
		t.Fatalf("whereis with three silent peers: %v %v after %v", got, err, time.Since(start))
	}
	// Nobody has it: the silent peers are waited for, up to the deadline.
	brief, stop2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop2()
	if _, err := a.Whereis(brief, "nobody"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("whereis nobody with silent peers: %v, want the deadline", err)
	}
}

// When the connection under a link drops (here closed by the sending side,
// as a network hiccup or an idle-connection trim would), what is sent next
// waits in the link's queue while the link dials the peer again from the
// addresses Connect remembered, then arrives, in order and complete.
func TestLinkRedialsAfterTheConnectionDrops(t *testing.T) {
	a, b := pair(t)
	const total = 2_000
	got := make(chan int, total)
	sink := spawn(t, b, "sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(p Ping) { got <- p.N; c.Receive(h) })
		c.Receive(h)
	})
	far := spawn(t, b, "echo", echo)
	ctx, cancel := askCtx()
	defer cancel()
	if _, err := a.System().Ask(ctx, far, Ping{0}); err != nil { // the streams are open
		t.Fatal(err)
	}
	if err := a.Host().Network().ClosePeer(b.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return a.Host().Network().Connectedness(b.ID()) != network.Connected && a.Router().Stats().PeersDown == 1
	})
	for i := range total {
		a.System().Send(sink, Ping{i})
	}
	for want := range total {
		if n := recv(t, got); n != want {
			t.Fatalf("message %d arrived as number %d", want, n)
		}
	}
	if a.Host().Network().Connectedness(b.ID()) != network.Connected {
		t.Fatal("the messages arrived, but a is not connected to b")
	}
	if v, err := a.System().Ask(ctx, far, Ping{1}); err != nil || v != (Pong{1}) {
		t.Fatalf("ask after the redial: %v, %v", v, err)
	}
	if st := a.Router().Stats(); st.LinkFull != 0 || a.System().DeadLetters() != 0 {
		t.Fatalf("link full %d, dead letters %d", st.LinkFull, a.System().DeadLetters())
	}
}
