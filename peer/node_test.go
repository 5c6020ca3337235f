package peer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/routing"
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

// Peers that discovery found are not protected from the connection
// manager (but while busy: protect_test.go) and their addresses are not
// pinned, so that peers that left cost nothing for good; a peer the
// application connected to stays pinned (addresses and protection) after
// it leaves.
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
	if !cm.IsProtected(pinned.ID(), pinTag) {
		t.Fatal("a peer connected to with Connect is not protected")
	}
	if cm.IsProtected(found.ID(), "") {
		t.Fatal("an idle found peer is protected")
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
	testutil.Eventually(t, 10*time.Second, "the found peer that left unprotected, the pinned one disconnected", func() bool {
		return !cm.IsProtected(found.ID(), "") && a.host.Network().Connectedness(pinned.ID()) != network.Connected
	})
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
