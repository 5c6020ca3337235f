package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/routing"
	"go.uber.org/goleak"
)

func quiet() Option { return WithLogger(testutil.QuietLogger()) }

func local() Option { return WithListenAddrs("/ip4/127.0.0.1/tcp/0") }

func newTestNode(t *testing.T, opts ...Option) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := New(ctx, append([]Option{quiet(), local()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

func TestKeyFileIsCreatedPrivateAndReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "identity.key")
	a := newTestNode(t, WithKeyFile(path))
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Fatalf("key file mode %o, want 600", mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b := newTestNode(t, WithKeyFile(path))
	if a.ID() != b.ID() {
		t.Fatalf("peer ID changed across restarts: %v then %v", a.ID(), b.ID())
	}
	if b.System().Peer() != b.ID().String() {
		t.Fatal("actor system's peer is not the node's ID")
	}
}

func TestCorruptKeyFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.key")
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), quiet(), local(), WithKeyFile(path)); err == nil {
		t.Fatal("corrupt key accepted")
	}
}

func TestBadOptions(t *testing.T) {
	for name, o := range map[string]Option{
		"no listen":            WithListenAddrs(),
		"short psk":            WithPrivateNetwork([]byte("short")),
		"nil psk":              WithPrivateNetwork(nil),
		"empty psk":            WithPrivateNetwork([]byte{}),
		"tiny frame":           WithMaxFrame(10),
		"no queue":             WithLinkQueue(0),
		"nil logger":           WithLogger(nil),
		"bad listen":           WithListenAddrs("/not/a/multiaddr"),
		"neg limit":            WithLimits(Limits{StreamsPerPeer: -1}),
		"neg window":           WithLimits(Limits{StreamWindow: -1}),
		"tiny window":          WithLimits(Limits{StreamWindow: MinStreamWindow - 1}),
		"huge window":          WithLimits(Limits{StreamWindow: MaxStreamWindow + 1}),
		"memory below a frame": WithLimits(Limits{Memory: 6 << 20}), // 4 MiB frames need 6.7 MiB
		"huge frame":           WithMaxFrame(codec.MaxFrameLimit + 1),
		"empty allowlist":      WithAllowlist(),
		"nil option":           nil,
		"empty key file":       WithKeyFile(""),
		"nil identity":         WithIdentity(nil),
		"psk and quic": func(c *config) error {
			_ = WithListenAddrs("/ip4/127.0.0.1/udp/0/quic-v1")(c)
			return WithPrivateNetwork(make([]byte, 32))(c)
		},
		"no adverts": WithAdvertisements(0, time.Minute),
	} {
		n, err := New(context.Background(), quiet(), local(), o) // o's listen addresses replace local's
		if err == nil {
			_ = n.Close(context.Background())
			t.Fatalf("%s: accepted", name)
		}
		if name != "bad listen" && !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalidOption", name, err)
		}
	}
}

// TestCloseDrainsAndLeavesNoGoroutine: Close writes what waits in the
// outbound links before it closes the host (every message arrives, in
// order), and once both nodes are closed no goroutine of theirs is left.
func TestCloseDrainsAndLeavesNoGoroutine(t *testing.T) {
	// libp2p starts a few process-wide goroutines once; a first node
	// started and closed before the snapshot lets them be.
	warm := newTestNode(t)
	if err := warm.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	others := goleak.IgnoreCurrent()
	defer func() { // libp2p's goroutines may take a moment to return after Close
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err := goleak.Find(others)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Error(err)
				return
			}
		}
	}()

	start := func() *Node {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := New(ctx, quiet(), local())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := start(), start()
	const total = 50_000
	got := make(chan int, total)
	sink, err := b.System().Spawn("sink", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(n int) { got <- n; c.Receive(h) })
		c.Receive(h)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	for i := range total {
		a.System().Send(sink, i)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("close with %d messages queued: %v", a.Stats().QueuedUser, err)
	}
	if dl := a.System().DeadLetters(); dl != 0 {
		t.Fatalf("%d dead letters", dl)
	}
	for want := range total {
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("message %d arrived as %d", want, n)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d messages arrived", want, total)
		}
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterBehaviorErrors(t *testing.T) {
	n := newTestNode(t)
	f := func(any) (actor.Behavior, error) { return func(*actor.Context) {}, nil }
	if err := n.RegisterBehavior("b", f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    BehaviorFactory
		want error
	}{
		{"", f, actor.ErrInvalidName},
		{"c", nil, actor.ErrNilBehavior},
		{"b", f, ErrBehaviorTaken},
	} {
		if err := n.RegisterBehavior(tc.name, tc.f); !errors.Is(err, tc.want) {
			t.Errorf("RegisterBehavior(%q): %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestFailedNewLeavesNoGoroutine: a New that fails after it started the
// host, the router and groups stops them all; one that fails to start the
// host closes the resource manager it made for it.
func TestFailedNewLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		if n, err := New(context.Background(), quiet(), local(), WithGroups(true), WithActorOptions(actor.WithLoops(0))); err == nil {
			_ = n.Close(context.Background())
			t.Fatal("an actor system of no loops was accepted")
		}
		// libp2p refuses the address: the resource manager made before
		// the host must be closed too.
		if n, err := New(context.Background(), quiet(), local(), WithListenAddrs("/not/a/multiaddr")); err == nil {
			_ = n.Close(context.Background())
			t.Fatal("a bad listen address was accepted")
		}
	}
	// Goroutines of libp2p's may take a moment to return after Close.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after three failed starts, %d before", runtime.NumGoroutine(), before)
		}
	}
}

// TestLimitsRefuseConnections: with at most one inbound connection, the
// first peer connects and exchanges messages, the second is refused.
func TestLimitsRefuseConnections(t *testing.T) {
	a := newTestNode(t, WithLimits(Limits{ConnsInbound: 1, Memory: 256 << 20}))
	if _, err := a.System().Spawn("echo", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(s string) { c.Reply(s); c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	b, c := newTestNode(t), newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatalf("first inbound connection: %v", err)
	}
	echo, err := Ref(a.ID(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.System().Ask(ctx, echo, "hi"); err != nil || v != "hi" {
		t.Fatalf("ask within the limits: %v, %v", v, err)
	}
	if err := c.Connect(ctx, *a.AddrInfo()); err == nil {
		t.Fatal("a second inbound connection was accepted with ConnsInbound 1")
	}
}

// TestStreamWindow: a peer may send exactly the receiver's stream window
// on a stream the receiver does not read, and no more.
func TestStreamWindow(t *testing.T) {
	for _, w := range []int{0, MinStreamWindow, 3 << 20} {
		want := w
		if w == 0 {
			want = DefaultStreamWindow
		}
		a := newTestNode(t, WithLimits(Limits{StreamWindow: w}))
		b := newTestNode(t)
		release := make(chan struct{})
		defer close(release)
		const proto = "/troupe-test/stall/1.0.0"
		a.Host().SetStreamHandler(proto, func(s network.Stream) { <-release; _ = s.Reset() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		s, err := b.Host().NewStream(ctx, a.ID(), proto)
		if err != nil {
			t.Fatal(err)
		}
		// The writes stop at the window; a deadline ends the last one.
		chunk, sent := make([]byte, 64<<10), 0
		for sent <= want {
			_ = s.SetWriteDeadline(time.Now().Add(time.Second))
			n, err := s.Write(chunk)
			sent += n
			if err != nil {
				break
			}
		}
		_ = s.Reset()
		// The multistream header and the protocol name (46 bytes) went
		// first, in the same window.
		if sent > want || sent < want-64 {
			t.Errorf("window %d: %d bytes sent to a stream that is not read, want %d less the protocol header", w, sent, want)
		}
	}
}

func TestCloseIsIdempotentAndStopsActors(t *testing.T) {
	n := newTestNode(t)
	if _, err := n.System().Spawn("a", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if n.System().Actors() != 0 {
		t.Fatalf("%d actors after close", n.System().Actors())
	}
}

// The calls of Node that wait refuse to run on an event loop: an actor
// that calls one gets actor.ErrBlockingCall at once, and nothing happens.
func TestNodeCallsThatWaitRefuseEventLoops(t *testing.T) {
	n, other := newTestNode(t), newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make(chan error, 5)
	if _, err := n.System().Spawn("", func(c *actor.Context) {
		_, whereisErr := n.Whereis(ctx, "nobody")
		_, lookupErr := n.Lookup(ctx, other.ID(), "nobody")
		for _, err := range []error{n.Connect(ctx, *other.AddrInfo()), n.GroupReady(ctx, "room", 1), n.Close(ctx), whereisErr, lookupErr} {
			errs <- err
		}
	}); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"Connect", "GroupReady", "Close", "Whereis", "Lookup"} {
		select {
		case err := <-errs:
			if !errors.Is(err, actor.ErrBlockingCall) {
				t.Errorf("%s on an event loop: %v, want ErrBlockingCall", name, err)
			}
		case <-ctx.Done():
			t.Fatalf("call %d of 5 never returned", i+1)
		}
	}
	if len(n.Peers()) != 0 {
		t.Fatal("Connect on an event loop connected")
	}
	// Close did nothing: the node still runs and closes from plain code.
	if _, err := n.System().Spawn("still", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }); err != nil {
		t.Fatalf("after Close on an event loop: %v", err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLinkFullIsDeadLetterAndSendCtxWaits(t *testing.T) {
	var full int
	letters := make(chan actor.DeadLetter, 1000)
	n := newTestNode(t, WithLinkQueue(4), WithActorOptions(actor.WithDeadLetterHook(func(d actor.DeadLetter) {
		select {
		case letters <- d:
		default:
		}
	})))
	// A peer that accepts the message stream and never reads it: the
	// link's writer blocks on flow control (after the smallest window,
	// four of these messages) and its queue cannot drain.
	stuck := newTestNode(t, WithLimits(Limits{StreamWindow: MinStreamWindow}))
	release := make(chan struct{})
	defer close(release)
	stuck.Host().SetStreamHandler(routing.ProtoMsg, func(s network.Stream) {
		<-release
		_ = s.Reset()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Connect(ctx, *stuck.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	ghost := stuck.ID()
	to, _ := Ref(ghost, "x")
	big := make([]byte, 64<<10)
	for range 100 {
		n.System().Send(to, big)
	}
	for len(letters) > 0 {
		if d := <-letters; errors.Is(d.Reason, routing.ErrLinkFull) {
			full++
		}
	}
	if full == 0 || n.Router().Stats().LinkFull == 0 {
		t.Fatalf("no link-full dead letters (%d), stats %+v", full, n.Router().Stats())
	}
	// The writer is stuck on flow control: once the queue is full again,
	// SendCtx waits for room until its context ends.
	var err error
	for range 40 {
		short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
		err = n.SendCtx(short, to, big)
		cancelShort()
		if err != nil {
			break
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SendCtx on a full link: %v, want DeadlineExceeded; stats %+v", err, n.Router().Stats())
	}
	// On an event loop it does not wait: it is refused at once, long
	// before its context ends.
	onLoop := make(chan error, 1)
	if _, err := n.System().Spawn("", func(c *actor.Context) {
		long, cancelLong := context.WithTimeout(ctx, time.Minute)
		defer cancelLong()
		onLoop <- n.SendCtx(long, to, big)
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-onLoop:
		if !errors.Is(err, actor.ErrBlockingCall) {
			t.Fatalf("SendCtx on an event loop, link full: %v, want ErrBlockingCall", err)
		}
	case <-ctx.Done():
		t.Fatal("SendCtx on an event loop waits for a full link")
	}
}

// TestLookupAndSpawnDoNotWaitBehindUserMessages: with the peer's user
// stream stuck (it never reads it, so a megabyte of messages fills the
// stream window and the link's user queue waits), a name lookup and a
// remote spawn still get through on the control stream.
func TestLookupAndSpawnDoNotWaitBehindUserMessages(t *testing.T) {
	a := newTestNode(t)
	b := newTestNode(t, WithLimits(Limits{StreamWindow: MinStreamWindow}))
	if err := b.RegisterBehavior("idle", func(any) (actor.Behavior, error) {
		return func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.System().Spawn("here", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) }); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	for _, p := range []protocol.ID{routing.ProtoMsg, routing.ProtoMsg10} {
		b.Host().SetStreamHandler(p, func(s network.Stream) { <-release; _ = s.Reset() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	sink, _ := Ref(b.ID(), "here")
	big := make([]byte, 64<<10)
	for range 32 { // 2 MiB: well past the window
		a.System().Send(sink, big)
	}
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	if _, err := a.Lookup(short, b.ID(), "here"); err != nil {
		t.Fatalf("lookup behind a stuck user stream: %v (stats %+v)", err, a.Router().Stats())
	}
	if _, err := a.SpawnRemote(short, b.ID(), "idle", "", "args"); err != nil {
		t.Fatalf("remote spawn behind a stuck user stream: %v", err)
	}
	if st := a.Router().Stats(); st.Sent >= 32 {
		t.Fatalf("all the user messages went out (stats %+v): the stream was not stuck", st)
	}
}

// TestLimitsFitTheMaxFrame: whatever the maximum frame, every memory limit
// that a stream's reader is charged in leaves room for one message of it,
// up to the largest frame routing allows.
func TestLimitsFitTheMaxFrame(t *testing.T) {
	for _, maxFrame := range []int{4 << 20, 24 << 20, 512 << 20, codec.MaxFrameLimit} {
		rm, err := resourceManager(Limits{}, maxFrame)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := rm.OpenStream(libp2ppeer.ID("some peer"), network.DirInbound)
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.SetProtocol(routing.ProtoMsg); err != nil {
			t.Fatal(err)
		}
		if err := sc.ReserveMemory(maxFrame+64<<10, network.ReservationPriorityHigh); err != nil {
			t.Errorf("max frame %d MiB: a message of the maximum frame is refused: %v", maxFrame>>20, err)
		}
		sc.Done()
		_ = rm.Close()
	}
}

// TestTroupeTypeNamesCannotBeTaken: a registry in which an application
// type holds a name of Troupe's own messages is refused at New (it would
// stand in for them on the wire); the same registry in two nodes is fine.
func TestTroupeTypeNamesCannotBeTaken(t *testing.T) {
	type impostor struct{ Found string }
	for _, name := range []string{"troupe.whereisReply", "troupe.exit"} {
		reg, err := codec.NewRegistry()
		if err != nil {
			t.Fatal(err)
		}
		codec.MustRegister[impostor](reg, name)
		n, err := New(context.Background(), quiet(), local(), WithRegistry(reg))
		if err == nil {
			_ = n.Close(context.Background())
		}
		if !errors.Is(err, codec.ErrDuplicate) {
			t.Fatalf("%s taken by an application type: %v, want ErrDuplicate", name, err)
		}
	}
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	newTestNode(t, WithRegistry(reg))
	newTestNode(t, WithRegistry(reg))
}

// TestSendCtxOnADoneContextOrAClosedNode: SendCtx sends nothing with a
// context already done, nor once the node closes, and says so, for local
// and remote targets alike.
func TestSendCtxOnADoneContextOrAClosedNode(t *testing.T) {
	a, b := newTestNode(t), newTestNode(t)
	local, _ := Ref(a.ID(), "x")
	remote, _ := Ref(b.ID(), "x")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for _, to := range []actor.Ref{local, remote} {
		if err := a.SendCtx(done, to, "hi"); !errors.Is(err, context.Canceled) {
			t.Fatalf("SendCtx to %v with a done context: %v", to, err)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, to := range []actor.Ref{local, remote} {
		if err := a.SendCtx(ctx, to, "hi"); !errors.Is(err, actor.ErrClosed) {
			t.Fatalf("SendCtx to %v after Close: %v, want actor.ErrClosed", to, err)
		}
	}
}

// TestKeyFileSafety: a key file others may read is refused; processes (here
// goroutines) that create the same key file at once all get the one key.
func TestKeyFileSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.key")
	k, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(path); !errors.Is(err, ErrInsecureKeyFile) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key file of mode 644: %v, want a refusal", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := LoadOrCreateKey(path); err != nil || !again.Equals(k) {
		t.Fatalf("the key read back: %v", err)
	}

	path = filepath.Join(t.TempDir(), "race", "identity.key")
	keys := make([]crypto.PrivKey, 8)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = LoadOrCreateKey(path) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || !keys[i].Equals(keys[0]) {
			t.Fatalf("creator %d: %v (or another key than creator 0's)", i, errs[i])
		}
	}
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 {
		t.Fatalf("%d files beside the key (temporary files left?): %v", len(entries), err)
	}
}

// TestConcurrentCloseWaitsOrGivesUp: a Close while another is closing the
// node waits for it and returns its result, or gives up with its own
// context.
func TestConcurrentCloseWaitsOrGivesUp(t *testing.T) {
	n := newTestNode(t)
	// An actor busy in a handler keeps the first Close in its shutdown.
	release, busy := make(chan struct{}), make(chan struct{})
	slow, err := n.System().Spawn("slow", func(c *actor.Context) {
		c.Receive(actor.On(func(string) { close(busy); <-release }))
	})
	if err != nil {
		t.Fatal(err)
	}
	n.System().Send(slow, "work")
	select {
	case <-busy:
	case <-time.After(10 * time.Second):
		t.Fatal("the actor did not start its work")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- n.Close(ctx) }()
	for !n.closing.Load() {
		select {
		case <-ctx.Done():
			t.Fatal("the first Close did not begin")
		case <-time.After(time.Millisecond):
		}
	}
	brief, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if err := n.Close(brief); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second Close while the first waits: %v, want its deadline", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first Close: %v", err)
	}
	if err := n.Close(brief); err != nil { // done: at once, whatever the context
		t.Fatalf("Close after Close: %v", err)
	}
	var none *Node // what a failed New returns
	if err := none.Close(ctx); err != nil {
		t.Fatalf("Close of a nil node: %v", err)
	}
}

// Peers that discovery found are protected from the connection manager
// only while connected and their addresses are not pinned, so that peers
// that left cost nothing for good; a peer the application connected to
// stays pinned (addresses and protection) after it leaves.
func TestOnlyConnectPinsAPeer(t *testing.T) {
	a := newTestNode(t, WithDHT()) // discovery on (no bootstrap peer: it sends nothing)
	found, pinned, gone := newTestNode(t), newTestNode(t), newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, ps := a.host.ConnManager(), a.host.Peerstore()
	// permanent reports whether some of id's addresses are permanent; it
	// drops them (the test looks once per peer).
	permanent := func(id libp2ppeer.ID) bool {
		before := len(ps.Addrs(id))
		ps.UpdateAddrs(id, peerstore.PermanentAddrTTL, 0)
		return len(ps.Addrs(id)) < before
	}
	if err := a.connectFound(ctx, *found.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(ctx, *pinned.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if !cm.IsProtected(found.ID(), foundTag) || !cm.IsProtected(pinned.ID(), pinTag) {
		t.Fatal("connected peers are not protected")
	}
	if cm.IsProtected(found.ID(), pinTag) {
		t.Fatal("a found peer is pinned")
	}
	// A dial that fails leaves no protection behind.
	info := *gone.AddrInfo()
	if err := gone.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.connectFound(ctx, info); err == nil {
		t.Fatal("connected to a closed node")
	}
	if cm.IsProtected(info.ID, "") {
		t.Fatal("a failed dial left the peer protected")
	}

	if err := errors.Join(found.Close(ctx), pinned.Close(ctx)); err != nil {
		t.Fatal(err)
	}
	for cm.IsProtected(found.ID(), "") || a.host.Network().Connectedness(pinned.ID()) == network.Connected {
		if ctx.Err() != nil {
			t.Fatal("a found peer that left is still protected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !cm.IsProtected(pinned.ID(), pinTag) {
		t.Fatal("a peer connected to with Connect lost its protection when it left")
	}
	if permanent(found.ID()) {
		t.Fatal("a found peer's addresses are permanent")
	}
	if !permanent(pinned.ID()) {
		t.Fatal("Connect did not keep the peer's addresses")
	}
}
