package integration

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

func newKey(t *testing.T) (crypto.PrivKey, libp2ppeer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := libp2ppeer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, id
}

func TestAllowlistKeepsStrangersFromActors(t *testing.T) {
	friendKey, friendID := newKey(t)
	guarded := newNode(t, peer.WithAllowlist(friendID))
	spawn(t, guarded, "echo", echo)
	echoRef, _ := peer.Ref(guarded.ID(), "echo")

	friend := newNode(t, peer.WithIdentity(friendKey))
	stranger := newNode(t)
	ctx, cancel := askCtx()
	defer cancel()

	if err := friend.Connect(ctx, *guarded.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if v, err := friend.System().Ask(ctx, echoRef, Ping{1}); err != nil || v != (Pong{1}) {
		t.Fatalf("friend ask: %v %v", v, err)
	}
	// The remote gater lets the handshake complete and then closes the
	// connection, which libp2p's Connect reports as a success; ours does
	// not. The actor protocols stay out of reach.
	if err := stranger.Connect(ctx, *guarded.AddrInfo()); !errors.Is(err, peer.ErrRefused) {
		t.Fatalf("a stranger's Connect: %v, want ErrRefused", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	if _, err := stranger.System().Ask(short, echoRef, Ping{2}); err == nil {
		t.Fatal("a peer off the allowlist reached an actor")
	}
}

func TestPrivateNetworkRefusesOtherKeys(t *testing.T) {
	psk := make([]byte, 32)
	other := make([]byte, 32)
	rand.Read(psk)
	rand.Read(other)
	a := newNode(t, peer.WithPrivateNetwork(psk))
	b := newNode(t, peer.WithPrivateNetwork(psk))
	c := newNode(t, peer.WithPrivateNetwork(other))
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatalf("same key: %v", err)
	}
	spawn(t, b, "echo", echo)
	echoRef, _ := peer.Ref(b.ID(), "echo")
	if v, err := a.System().Ask(ctx, echoRef, Ping{3}); err != nil || v != (Pong{3}) {
		t.Fatalf("ask within the private network: %v %v", v, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	if err := c.Connect(short, *b.AddrInfo()); err == nil {
		t.Fatal("a peer with another key connected")
	}
}

func TestGarbageOnMsgStreamResetsOnlyThatStream(t *testing.T) {
	a, b := pair(t)
	echoRef := spawn(t, b, "echo", echo)
	raw := newNode(t)
	ctx, cancel := askCtx()
	defer cancel()
	if err := raw.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		junk       []byte
		closeWrite bool // the junk ends the stream
	}{
		{junk: []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff garbage")},            // invalid length prefix
		{junk: binary.AppendUvarint(nil, 4<<30)},                                      // a 4 GiB frame
		{junk: append(binary.AppendUvarint(nil, 1000), "short"...), closeWrite: true}, // truncated frame
		// Garbage that frames: "G" is a length of 71, and the 71 bytes
		// after it are no envelope.
		{junk: []byte(strings.Repeat("GET / HTTP/1.1\r\nHost: troupe\r\n", 20))},
		{junk: []byte{3, 0xa1, 0x01, 0x02}}, // a frame holding the CBOR map {1: 2}
	} {
		before := b.Router().Stats().StreamsReset
		s, err := raw.Host().NewStream(ctx, b.ID(), routing.ProtoMsg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(c.junk); err != nil {
			t.Fatal(err)
		}
		if c.closeWrite {
			_ = s.CloseWrite()
		}
		// The reset reaches us as a read error, not EOF.
		buf := make([]byte, 1)
		_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := s.Read(buf); err == nil {
			t.Fatal("read succeeded on a stream that should be reset")
		}
		_ = s.Reset()
		waitFor(t, func() bool { return b.Router().Stats().StreamsReset > before })
	}
	// b keeps serving others.
	if v, err := a.System().Ask(ctx, echoRef, Ping{4}); err != nil || v != (Pong{4}) {
		t.Fatalf("ask after garbage: %v %v", v, err)
	}
	if st := b.Router().Stats(); st.StreamsReset != 5 || st.DecodeErrors < 5 {
		t.Fatalf("stats after five bad streams: %+v", st)
	}
}

// TestAskRepliesCannotBeForged: a third peer that knows the name an Ask
// waits under (names are sequential) sends replies to it with every
// correlation ID near that name's number; the Ask still gets the asked
// actor's reply, because correlation IDs are random.
func TestAskRepliesCannotBeForged(t *testing.T) {
	asker, asked := pair(t)
	forger := newNode(t)
	connect(t, asker, forger)
	ctx, cancel := askCtx()
	defer cancel()
	waiting := make(chan actor.Ref, 1)
	slow := spawn(t, asked, "slow", func(c *actor.Context) {
		c.Receive(actor.On(func(Ping) {
			req := c.Request()
			waiting <- req.Sender()
			c.Receive(actor.On(func(string) { c.Respond(req, Pong{N: 1}) }))
		}))
	})
	slowRef, _ := peer.Ref(asked.ID(), "slow")
	type result struct {
		v   any
		err error
	}
	got := make(chan result, 1)
	go func() {
		v, err := asker.System().Ask(ctx, slowRef, Ping{N: 1})
		got <- result{v, err}
	}()
	waiter := recv(t, waiting)
	id, err := strconv.ParseUint(strings.TrimPrefix(waiter.Name(), "$"), 36, 64)
	if err != nil {
		t.Fatalf("waiter name %q: %v", waiter.Name(), err)
	}
	reg := registry(t)
	typ, body, err := reg.Encode(Pong{N: 666})
	if err != nil {
		t.Fatal(err)
	}
	_, fw := rawWriter(t, forger, asker, routing.ProtoMsg10, false)
	const span = 1000
	before := asker.Router().Stats().Received
	for corr := max(id, span) - span; corr <= id+span; corr++ {
		if corr == 0 {
			continue
		}
		env := &codec.Envelope{Kind: codec.KindReply, To: waiter.Name(), FromName: "slow", Corr: corr, Type: typ, Body: body}
		if err := fw.WriteEnvelope(env); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	// Let the forged replies arrive before the real one is sent.
	for asker.Router().Stats().Received < before+span {
		select {
		case r := <-got:
			t.Fatalf("the Ask ended with a forged reply: %v, %v", r.v, r.err)
		case <-ctx.Done():
			t.Fatalf("forged replies not received: stats %+v", asker.Router().Stats())
		case <-time.After(time.Millisecond):
		}
	}
	asked.System().Send(slow, "reply now")
	select {
	case r := <-got:
		if r.err != nil || r.v != (Pong{N: 1}) {
			t.Fatalf("Ask got %v, %v; want the asked actor's Pong{1}", r.v, r.err)
		}
	case <-ctx.Done():
		t.Fatal("no reply")
	}
}

// monitorsSettled: a watcher that monitors an actor, then a missing actor
// on the same peer, gets the second one's Down (no such actor) only after
// the first monitor reached the actor's inbox: signals to a peer travel in
// order on one stream and are handed to the actors in that order. So a
// message sent to the actor after that Down finds the monitor in place.

// TestDownCannotBeForged: a third peer that guesses a monitor's ID (IDs are
// sequential) sends the watcher a Down under it; the watcher drops it,
// since it does not come from the actor watched under that ID, and still
// gets the real Down when that actor stops.
func TestDownCannotBeForged(t *testing.T) {
	watcherNode, watched := pair(t)
	forger := newNode(t)
	connect(t, watcherNode, forger)
	target, targetRef, nobody := oneShotTarget(t, watched)
	ids := make(chan actor.MonitorID, 1)
	got := make(chan any, 4)
	spawn(t, watcherNode, "watcher", func(c *actor.Context) {
		id := c.Monitor(targetRef)
		c.Monitor(nobody)
		var h actor.Case
		h = actor.Any(func(m any) {
			if d, ok := m.(actor.Down); ok && d.Ref == nobody {
				ids <- id // the target has the monitor (see monitorsSettled)
			} else {
				got <- m
			}
			c.Receive(h)
		})
		c.Receive(h)
	})
	id := recv(t, ids)

	type reason struct {
		Code uint8  `cbor:"1,keyasint"`
		Text string `cbor:"2,keyasint,omitempty"`
	}
	down, err := cbor.Marshal(struct {
		ID     uint64 `cbor:"1,keyasint"`
		Reason reason `cbor:"2,keyasint"`
	}{uint64(id), reason{Code: 255, Text: "forged"}})
	if err != nil {
		t.Fatal(err)
	}
	typ, ping, err := registry(t).Encode(Ping{N: 7})
	if err != nil {
		t.Fatal(err)
	}
	// The forged Down, then a Ping from the same sender: the watcher sees
	// them in that order unless the Down is dropped.
	_, fw := rawWriter(t, forger, watcherNode, routing.ProtoMsg10, false)
	for _, env := range []*codec.Envelope{
		{Kind: codec.KindSystem, To: "watcher", FromName: "target", Type: "troupe.down", Body: down},
		{Kind: codec.KindUser, To: "watcher", FromName: "target", Type: typ, Body: ping},
	} {
		if err := fw.WriteEnvelope(env); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got); m != (Ping{N: 7}) {
		t.Fatalf("the watcher got %#v first, want the Ping: the forged Down was taken", m)
	}
	watched.System().Send(target, "stop")
	d, ok := recv(t, got).(actor.Down)
	if !ok || d.ID != id || d.Ref != targetRef || d.Reason != nil {
		t.Fatalf("after the target stopped: %#v (%v), want its Down", d, d.Reason)
	}
}

// TestMonitorsWithTheSameIDFromTwoPeers: monitor IDs are numbered by each
// watcher's system, so watchers on two peers can monitor one actor under
// the same ID. Each monitor stands on its own: one peer's Demonitor leaves
// the other's in place, and the other gets its Down.
func TestMonitorsWithTheSameIDFromTwoPeers(t *testing.T) {
	home, b, c := newNode(t), newNode(t), newNode(t)
	connect(t, home, b, c)
	target, targetRef, nobody := oneShotTarget(t, home)
	const want = actor.MonitorID(50)
	// watch monitors the target under ID want (demonitoring the lower IDs
	// it gets on the way), reports it on ready, and, with drop, demonitors
	// it at once.
	watch := func(drop bool, ready chan<- actor.MonitorID, downs chan<- actor.Down) actor.Behavior {
		return func(c *actor.Context) {
			id := c.Monitor(targetRef)
			for id < want {
				c.Demonitor(id)
				id = c.Monitor(targetRef)
			}
			if drop {
				c.Demonitor(id)
			}
			c.Monitor(nobody)
			var h actor.Case
			h = actor.On(func(d actor.Down) {
				if d.Ref == nobody {
					ready <- id // see monitorsSettled
				} else {
					downs <- d
				}
				c.Receive(h)
			})
			c.Receive(h)
		}
	}
	readyB, readyC := make(chan actor.MonitorID, 1), make(chan actor.MonitorID, 1)
	downsB, downsC := make(chan actor.Down, 1), make(chan actor.Down, 1)
	spawn(t, b, "watcher", watch(false, readyB, downsB))
	idB := recv(t, readyB)
	spawn(t, c, "watcher", watch(true, readyC, downsC))
	if idC := recv(t, readyC); idB != want || idC != want {
		t.Fatalf("monitor IDs %d and %d, want both %d", idB, idC, want)
	}
	home.System().Send(target, "stop")
	if d := recv(t, downsB); d.ID != want || d.Ref != targetRef {
		t.Fatalf("b's Down: %+v", d)
	}
	select {
	case d := <-downsC:
		t.Fatalf("c demonitored, yet got %+v", d)
	default:
	}
}

// connect connects each of others to n.
func connect(t *testing.T, n *peer.Node, others ...*peer.Node) {
	t.Helper()
	ctx, cancel := askCtx()
	defer cancel()
	for _, o := range others {
		if err := o.Connect(ctx, *n.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
}

// oneShotTarget spawns on n an actor "target" that stops after its first
// message, and returns its local Ref, its Ref from other peers and the Ref
// of a missing actor on n.
func oneShotTarget(t *testing.T, n *peer.Node) (local, remote, missing actor.Ref) {
	t.Helper()
	local = spawn(t, n, "target", func(c *actor.Context) {
		c.Receive(actor.On(func(string) {}))
	})
	remote, _ = peer.Ref(n.ID(), "target")
	missing, _ = peer.Ref(n.ID(), "nobody")
	return local, remote, missing
}

// A connected peer cannot stop another peer's service actor ("$node", which
// answers Lookup and SpawnRemote for everyone) with an exit signal, nor
// link to it; it cannot leave monitors or links that no actor holds; and
// only the first hello of a stream counts, so it cannot flood restarts.
func TestHostileSystemSignalsCostNothing(t *testing.T) {
	hostile, b := pair(t)
	ch := make(chan int, 1)
	sink := spawn(t, b, "sink", collect(ch))
	reg := registry(t)
	_, fw := rawWriter(t, hostile, b, routing.ProtoCtl, true) // hello 7
	before := b.Router().Stats()
	for _, e := range []*codec.Envelope{
		{Kind: codec.KindSystem, Type: "troupe.exit", To: peer.NodeActor, FromName: "x", Body: []byte{0xa2, 0x01, 0xa1, 0x01, 0x01, 0x03, 0xf5}}, // {1: {1: 1}, 3: true}: kill
		{Kind: codec.KindSystem, Type: "troupe.link", To: peer.NodeActor, FromName: "x", Body: []byte{0xa0}},
		{Kind: codec.KindSystem, Type: "troupe.monitor", To: "sink", Body: []byte{0xa1, 0x01, 0x05}}, // from no actor
		{Kind: codec.KindSystem, Type: "troupe.hello", Body: []byte{0xa1, 0x01, 0x09}},               // {1: 9}: "restarted"
		{Kind: codec.KindSystem, Type: "troupe.hello", Body: []byte{0xa1, 0x01, 0x07}},
	} {
		if err := fw.WriteEnvelope(e); err != nil {
			t.Fatal(err)
		}
	}
	writeBatches(t, reg, fw, 1, 1) // after them on the stream
	checkSeqs(t, ch, 1, 1)
	if _, ok := b.System().Whereis(peer.NodeActor); !ok {
		t.Fatal("b's $node was stopped by another peer")
	}
	honest := newNode(t)
	ctx, cancel := askCtx()
	defer cancel()
	if err := honest.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if ref, err := honest.Lookup(ctx, b.ID(), "sink"); err != nil || ref != sink {
		t.Fatalf("lookup on b after the hostile signals: %v, %v", ref, err)
	}
	// The stream's first hello (7) differs from the incarnation hostile
	// announced in identify: one restart. Had the two hellos after it
	// counted, 7 → 9 → 7 would make two more.
	st := b.Router().Stats()
	if st.DecodeErrors != before.DecodeErrors+1 || st.PeersDown > 1 || st.StreamsReset != before.StreamsReset {
		t.Fatalf("stats %+v, before %+v: want one more decode error (the monitor), at most one restart, no reset", st, before)
	}
}

// A peer may keep only a few inbound streams of a protocol open at once
// (its writer needs one), and a control stream carries no fragments of a
// large message: each costs up to the maximum frame of memory. (A stream
// that introduces itself with a hello ends the older ones: these do not.)
func TestInboundStreamsAreBounded(t *testing.T) {
	hostile, b := pair(t)
	ch := make(chan int, 8)
	spawn(t, b, "sink", collect(ch))
	reg := registry(t)
	for i := range 4 {
		ctx, cancel := askCtx()
		s, err := hostile.Host().NewStream(ctx, b.ID(), routing.ProtoCtl)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Reset() })
		fw := codec.NewFrameWriter(s, 0, codec.WithCompact(true))
		writeBatches(t, reg, fw, i, 1) // the stream is being read
		checkSeqs(t, ch, i, 1)
	}
	before := b.Router().Stats().StreamsReset
	s, fw := rawWriter(t, hostile, b, routing.ProtoCtl, true)
	_ = fw.Flush()
	buf := make([]byte, 1)
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Read(buf); err == nil {
		t.Fatal("a fifth control stream was read")
	}
	if got := b.Router().Stats().StreamsReset; got != before+1 {
		t.Fatalf("%d streams reset, want %d", got, before+1)
	}
	// A message stream is still welcome.
	_, msg := rawWriter(t, hostile, b, routing.ProtoMsg, true)
	writeBatches(t, reg, msg, 10, 1)
	checkSeqs(t, ch, 10, 1)
	// A fragment on a control stream (of another peer, which has room for
	// one) resets it.
	other := newNode(t)
	ctx, cancel := askCtx()
	defer cancel()
	if err := other.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	fragment := &codec.Envelope{Kind: codec.KindSystem, Type: "troupe.fragment", To: "sink", FromName: "x", Body: []byte{0xa3, 0x01, 0x63, 'x', '.', 'Y', 0x03, 0x19, 0xff, 0xff, 0x04, 0x41, 0x00}} // {1: "x.Y", 3: 65535, 4: h'00'}: a valid first fragment
	_, ctl := rawWriter(t, other, b, routing.ProtoCtl, true)
	writeBatches(t, reg, ctl, 20, 1) // the stream is being read
	checkSeqs(t, ch, 20, 1)
	before = b.Router().Stats().StreamsReset
	if err := ctl.WriteEnvelope(fragment); err != nil {
		t.Fatal(err)
	}
	_ = ctl.Flush()
	waitFor(t, func() bool { return b.Router().Stats().StreamsReset == before+1 })
}
