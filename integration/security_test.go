package integration

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

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
	// Connect may even report success (the remote gater closes the
	// connection after the handshake); the actor protocols stay out of reach.
	_ = stranger.Connect(ctx, *guarded.AddrInfo())
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
	for _, junk := range [][]byte{
		[]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff garbage"), // invalid length prefix
		binary.AppendUvarint(nil, 4<<30),                           // a 4 GiB frame
		append(binary.AppendUvarint(nil, 1000), "short"...),        // truncated frame
	} {
		before := b.Router().Stats().StreamsReset
		s, err := raw.Host().NewStream(ctx, b.ID(), routing.ProtoMsg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(junk); err != nil {
			t.Fatal(err)
		}
		if len(junk) < 20 && junk[0] != 0xff {
			_ = s.CloseWrite() // the truncated frame ends here
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
	if st := b.Router().Stats(); st.StreamsReset != 3 || st.DecodeErrors < 3 {
		t.Fatalf("stats after three bad streams: %+v", st)
	}
}

// TestAskRepliesCannotBeForged: a third peer that knows the name an Ask
// waits under (names are sequential) sends replies to it with every
// correlation ID near that name's number; the Ask still gets the asked
// actor's reply, because correlation IDs are random.
func TestAskRepliesCannotBeForged(t *testing.T) {
	asker, asked := pair(t)
	forger := newNode(t)
	ctx, cancel := askCtx()
	defer cancel()
	if err := forger.Connect(ctx, *asker.AddrInfo()); err != nil {
		t.Fatal(err)
	}
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
