package integration

import (
	"errors"
	"io"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

// Protocol versions: /troupe/msg/1.1.0 carries compact frames, 1.0.0 the
// full ones; routers serve both and offer 1.1.0 first.

// outboundProtocols returns the protocols of n's open outbound streams to
// the peer of other.
func outboundProtocols(n, other *peer.Node) map[protocol.ID]bool {
	out := map[protocol.ID]bool{}
	for _, c := range n.Host().Network().ConnsToPeer(other.ID()) {
		for _, s := range c.GetStreams() {
			if s.Stat().Direction == network.DirOutbound {
				out[s.Protocol()] = true
			}
		}
	}
	return out
}

// collect forwards every Batch it receives to ch.
func collect(ch chan<- int) actor.Behavior {
	return func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(b Batch) { ch <- b.Seq; c.Receive(h) })
		c.Receive(h)
	}
}

// checkSeqs receives n sequence numbers from ch and fails unless they are
// from, from+1, ...
func checkSeqs(t *testing.T, ch <-chan int, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if got := recv(t, ch); got != i {
			t.Fatalf("received Batch %d, want %d", got, i)
		}
	}
}

func TestNewPeersTalkCompactFrames(t *testing.T) {
	a, b := pair(t)
	ch := make(chan int, 1000)
	sink := spawn(t, b, "sink", collect(ch))
	for i := range 500 {
		a.System().Send(sink, Batch{Seq: i})
	}
	checkSeqs(t, ch, 0, 500)
	if p := outboundProtocols(a, b); !p[routing.ProtoMsg] || p[routing.ProtoMsg10] {
		t.Fatalf("a's outbound streams to b: %v, want %s", p, routing.ProtoMsg)
	}
	if st := b.Router().Stats(); st.DecodeErrors != 0 || st.StreamsReset != 0 {
		t.Fatalf("b's stats: %+v", st)
	}
}

// A peer that serves only 1.0.0 (as peers of earlier versions do) gets
// full frames, and its answers still arrive.
func TestOldReaderGetsFullFrames(t *testing.T) {
	a := newNode(t)
	old := newNode(t)
	old.Host().RemoveStreamHandler(routing.ProtoMsg)
	old.Host().RemoveStreamHandler(routing.ProtoCtl)
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *old.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	ch := make(chan int, 1000)
	sink := spawn(t, old, "sink", collect(ch))
	echoRef := spawn(t, old, "echo", echo)
	for i := range 500 {
		a.System().Send(sink, Batch{Seq: i})
	}
	checkSeqs(t, ch, 0, 500)
	for i := range 20 { // replies come back over old's own (compact) stream to a
		if v, err := a.System().Ask(ctx, echoRef, Ping{i}); err != nil || v != (Pong{i}) {
			t.Fatalf("ask %d: %v, %v", i, v, err)
		}
	}
	// A large message goes whole, not in fragments (which 1.0.0 readers
	// do not know).
	big := spawn(t, old, "big", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(m Big) { c.Reply(len(m.A) + len(m.B) + len(m.C)); c.Receive(h) })
		c.Receive(h)
	})
	if v, err := a.System().Ask(ctx, big, bigOf(5, 600<<10)); err != nil || v != 600<<10 {
		t.Fatalf("large ask to the old peer: %v, %v", v, err)
	}
	if p := outboundProtocols(a, old); !p[routing.ProtoMsg10] || p[routing.ProtoMsg] {
		t.Fatalf("a's outbound streams to the old peer: %v, want %s", p, routing.ProtoMsg10)
	}
	if st := old.Router().Stats(); st.DecodeErrors != 0 || st.StreamsReset != 0 {
		t.Fatalf("old peer's stats: %+v", st)
	}
}

// rawWriter opens a stream from n to to with protocol p and returns a
// FrameWriter on it that has sent a hello.
func rawWriter(t *testing.T, n, to *peer.Node, p protocol.ID, compact bool) (network.Stream, *codec.FrameWriter) {
	t.Helper()
	return rawWriterAs(t, n, to, p, compact, 7)
}

// rawWriterAs is rawWriter whose hello announces incarnation inc.
func rawWriterAs(t *testing.T, n, to *peer.Node, p protocol.ID, compact bool, inc uint64) (network.Stream, *codec.FrameWriter) {
	t.Helper()
	ctx, cancel := askCtx()
	defer cancel()
	s, err := n.Host().NewStream(ctx, to.ID(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Reset() })
	fw := codec.NewFrameWriter(s, 0, codec.WithCompact(compact))
	body, err := cbor.Marshal(map[int]uint64{1: inc})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, Type: "troupe.hello", Body: body}); err != nil {
		t.Fatal(err)
	}
	return s, fw
}

// writeBatches writes Batch messages from..from+n-1 to the actor "sink",
// returning the bytes they took.
func writeBatches(t *testing.T, reg *codec.Registry, fw *codec.FrameWriter, from, n int) int {
	t.Helper()
	before := fw.Buffered()
	for i := from; i < from+n; i++ {
		typ, body, err := reg.Encode(Batch{Seq: i})
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "sink", FromName: "src", Type: typ, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	size := fw.Buffered() - before
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	return size
}

// A writer of version 1.0.0 is understood, and a short envelope on a 1.0.0
// stream is garbage that resets the stream; on 1.1.0 short envelopes are
// messages.
func TestOldWriterInteroperates(t *testing.T) {
	a, b := pair(t)
	ch := make(chan int, 100)
	spawn(t, b, "sink", collect(ch))
	reg := registry(t)

	_, old := rawWriter(t, a, b, routing.ProtoMsg10, false)
	full := writeBatches(t, reg, old, 0, 10)
	checkSeqs(t, ch, 0, 10)
	before := b.Router().Stats()
	if err := old.WriteFrame([]byte{0x81, 0x41, 0xf6}); err != nil { // [h'f6']
		t.Fatal(err)
	}
	if err := old.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return b.Router().Stats().StreamsReset == before.StreamsReset+1 })
	if st := b.Router().Stats(); st.DecodeErrors != before.DecodeErrors+1 {
		t.Fatalf("after a short envelope on %s: stats %+v, before %+v", routing.ProtoMsg10, st, before)
	}
	_, old = rawWriter(t, a, b, routing.ProtoMsg10, false)
	writeBatches(t, reg, old, 10, 1)
	checkSeqs(t, ch, 10, 1) // a new stream is served

	_, compact := rawWriter(t, a, b, routing.ProtoMsg, true)
	short := writeBatches(t, reg, compact, 100, 10)
	checkSeqs(t, ch, 100, 10)
	if short >= full {
		t.Fatalf("10 messages took %d bytes compact, %d full", short, full)
	}
	t.Logf("10 Batch frames: %d bytes full, %d compact", full, short)
	if st := b.Router().Stats(); st.DecodeErrors != before.DecodeErrors+1 || st.StreamsReset != before.StreamsReset+1 {
		t.Fatalf("stats %+v", st)
	}
}

// The benchmarks' message, a 100-byte Blob from "source" to "sink", takes
// 139 bytes as a full frame and 112 as a short one.
func TestBenchmarkFrameSize(t *testing.T) {
	reg := registry(t)
	typ, body, err := reg.Encode(seqBlob(1))
	if err != nil {
		t.Fatal(err)
	}
	fw := codec.NewFrameWriter(io.Discard, 0, codec.WithCompact(true))
	var sizes []int
	for range 3 {
		before := fw.Buffered()
		if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "sink", FromName: "source", Type: typ, Body: body}); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fw.Buffered()-before)
	}
	if sizes[0] != 139 || sizes[1] != 112 || sizes[2] != 112 {
		t.Fatalf("frame sizes %v, want 139, 112, 112", sizes)
	}
}

// A user message whose type is one of the system messages' (an exit, a
// down …) is a bad frame: counted and skipped, never handed to an actor
// as a value of the runtime's own types; the stream goes on.
func TestUserFrameOfSystemTypeIsRefused(t *testing.T) {
	a, b := pair(t)
	ch := make(chan int, 100)
	spawn(t, b, "sink", collect(ch))
	others := make(chan any, 4)
	spawn(t, b, "any", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) { others <- m; c.Receive(h) })
		c.Receive(h)
	})
	reg := registry(t)
	_, fw := rawWriter(t, a, b, routing.ProtoMsg, true)
	before := b.Router().Stats()
	exit := []byte{0xa1, 0x01, 0xa1, 0x01, 0x61, 0x78} // {1: {1: "x"}}: an exit's body
	for _, typ := range []string{"troupe.exit", "troupe.down", "troupe.link"} {
		if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "any", FromName: "src", Type: typ, Body: exit}); err != nil {
			t.Fatal(err)
		}
	}
	// Then a good message to the same actor, from the same sender: had
	// the bad ones been delivered, they would come first.
	typ, body, err := reg.Encode(Batch{Seq: 99})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "any", FromName: "src", Type: typ, Body: body}); err != nil {
		t.Fatal(err)
	}
	writeBatches(t, reg, fw, 0, 1)
	checkSeqs(t, ch, 0, 1) // the stream goes on
	if m := recv(t, others); m != (Batch{Seq: 99}) {
		t.Fatalf("the actor got %T %v first", m, m)
	}
	if st := b.Router().Stats(); st.DecodeErrors-before.DecodeErrors != 3 || st.StreamsReset != before.StreamsReset {
		t.Fatalf("stats %+v, before %+v: want 3 more decode errors and no reset", st, before)
	}
}

// Incarnations are exchanged both ways when a connection is set up: each
// peer announces its own in identify, so neither needs to send a message.
func TestIncarnationsAreExchangedOnConnect(t *testing.T) {
	a, b := pair(t)
	waitFor(t, func() bool {
		return a.Router().Stats().RemoteIncarnated > 0 && b.Router().Stats().RemoteIncarnated > 0
	})
	if sa, sb := a.Router().Stats(), b.Router().Stats(); sa.Sent+sb.Sent+sa.Received+sb.Received != 0 {
		t.Fatalf("messages went between the peers: %+v, %+v", sa, sb)
	}
	agent, err := a.Host().Peerstore().Get(b.ID(), "AgentVersion")
	if err != nil || agent != routing.AgentVersion(b.Router().Incarnation()) {
		t.Fatalf("b's agent version as a sees it: %v, %v; b's incarnation %x", agent, err, b.Router().Incarnation())
	}
}

// restartablePair returns two connected nodes, the second with the
// identity key returned, so that the test can start it again as the same
// peer.
func restartablePair(t *testing.T) (crypto.PrivKey, *peer.Node, *peer.Node) {
	t.Helper()
	key, _ := newKey(t)
	a, b := newNode(t), newNode(t, peer.WithIdentity(key))
	ctx, cancel := askCtx()
	defer cancel()
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	return key, a, b
}

// A peer that restarts and connects again while its old connection still
// looks alive (no disconnection seen: a laptop back from sleep) is known
// by its new incarnation: monitors of its former actors fire with NodeDown.
func TestRestartSeenThroughANewConnection(t *testing.T) {
	key, a, b := restartablePair(t)
	ctx, cancel := askCtx()
	defer cancel()
	far, downs := watchFar(t, a, b)
	// The same peer ID, a new start: it dials a while b's connection lives.
	again := newNode(t, peer.WithIdentity(key))
	if err := again.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, downs); d.Ref != far || !errors.Is(d.Reason, actor.ErrNodeDown) {
		t.Fatalf("down %+v, want %v with ErrNodeDown", d, far)
	}
	if a.Router().Stats().PeersDown != 1 {
		t.Fatalf("stats %+v", a.Router().Stats())
	}
}

// The link to a peer that disconnected is retired (no goroutines or
// buffers kept for it); a message to that peer once it is back makes a new
// link and arrives.
func TestLinksOfDepartedPeersAreRetired(t *testing.T) {
	key, a, b := restartablePair(t)
	ctx, cancel := askCtx()
	defer cancel()
	ch := make(chan int, 2)
	sink := spawn(t, b, "sink", collect(ch))
	a.System().Send(sink, Batch{Seq: 1})
	checkSeqs(t, ch, 1, 1)
	if n := a.Router().Stats().ConnectedLinks; n != 1 {
		t.Fatalf("%d links after a message", n)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return a.Router().Stats().ConnectedLinks == 0 })
	// A message to the peer while it is away makes a link again, which
	// gives the message up as unreachable and is retired in turn.
	a.System().Send(sink, Batch{Seq: 0})
	waitFor(t, func() bool {
		st := a.Router().Stats()
		return st.Undeliverable == 1 && st.ConnectedLinks == 0
	})

	again := newNode(t, peer.WithIdentity(key)) // the same peer, back
	spawn(t, again, "sink", collect(ch))
	if err := a.Connect(ctx, *again.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	a.System().Send(sink, Batch{Seq: 2})
	checkSeqs(t, ch, 2, 1)
	if st := a.Router().Stats(); st.ConnectedLinks != 1 || st.LinkFull != 0 || st.Undeliverable != 1 {
		t.Fatalf("stats after the peer came back: %+v", st)
	}
}
