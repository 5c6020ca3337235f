package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

// Control messages a hostile peer writes by hand (CBOR bodies of the
// routing wire types).
var (
	killBody     = []byte{0xa2, 0x01, 0xa1, 0x01, 0x01, 0x03, 0xf5}                           // {1: {1: 1}, 3: true}: kill
	exitBody     = []byte{0xa1, 0x01, 0xa2, 0x01, 0x18, 0xff, 0x02, 0x64, 'b', 'o', 'o', 'm'} // {1: {1: 255, 2: "boom"}}
	linkExitBody = []byte{0xa2, 0x01, 0xa2, 0x01, 0x18, 0xff, 0x02, 0x64, 'b', 'o', 'o', 'm', 0x02, 0xf5}
	linkBody     = []byte{0xa0}
)

// hostileSignals are the exit signals and the link a peer sends to name,
// from an actor "x" of its own that never linked to it, and exits from no
// actor (which must not pass for the receiving node's own plain code).
func hostileSignals(name string) []*codec.Envelope {
	env := func(typ, from string, body []byte) *codec.Envelope {
		return &codec.Envelope{Kind: codec.KindSystem, Type: typ, To: name, FromName: from, Body: body}
	}
	return []*codec.Envelope{
		env("troupe.exit", "x", killBody), env("troupe.exit", "x", exitBody), env("troupe.exit", "x", linkExitBody),
		env("troupe.link", "x", linkBody),
		env("troupe.exit", "", killBody), env("troupe.exit", "", exitBody),
	}
}

// TestHostilePeerCannotKill: a connected peer sends kills, exit signals
// and links to an echo actor, a supervisor and its child, and to the
// waiter of a pending System.Ask, then disconnects (which fires every
// link it made). All of them live on, no monitor of them fires, and the
// Ask gets its reply.
func TestHostilePeerCannotKill(t *testing.T) {
	hostile, b := pair(t)
	echoRef := spawn(t, b, "echo", echo)
	sup := spawn(t, b, "sup", actor.Supervisor(actor.SupervisorSpec{
		MaxRestarts: 5, Period: time.Minute,
		Children: []actor.ChildSpec{{Name: "worker", Start: echo}},
	}))
	ctx, cancel := askCtx()
	defer cancel()
	waitFor(t, func() bool { _, ok := b.System().Whereis("worker"); return ok })
	worker, _ := b.System().Whereis("worker")
	var downs []<-chan actor.Down
	for _, r := range []actor.Ref{echoRef, sup, worker} {
		downs = append(downs, monitor(t, b, r))
	}

	// A pending Ask of b's, to an actor of the hostile peer that tells
	// the test the waiter's name and replies when told to.
	waiterName := make(chan string, 1)
	release := make(chan struct{})
	slow := spawn(t, hostile, "slow", func(c *actor.Context) {
		c.Receive(actor.On(func(p Ping) {
			waiterName <- c.Sender().Name()
			<-release
			c.Reply(Pong(p))
		}))
	})
	asked := make(chan error, 1)
	go func() {
		v, err := b.System().Ask(ctx, slow, Ping{7})
		if err == nil && v != (Pong{7}) {
			err = errors.New("wrong reply")
		}
		asked <- err
	}()
	waiter := recv(t, waiterName)

	fw := honestHello(t, hostile, b, routing.ProtoCtl)
	var envs []*codec.Envelope
	for _, name := range []string{"echo", "sup", "worker", waiter} {
		envs = append(envs, hostileSignals(name)...)
	}
	for _, e := range envs {
		if err := fw.WriteEnvelope(e); err != nil {
			t.Fatal(err)
		}
	}
	// Once a message written after them arrived, the signals are in
	// their actors' mailboxes, ahead of b's own asks below.
	seqs := make(chan int, 1)
	spawn(t, b, "sink", collect(seqs))
	writeBatches(t, registry(t), fw, 1, 1)
	checkSeqs(t, seqs, 1, 1)
	for _, r := range []actor.Ref{echoRef, worker} {
		if _, err := b.System().Ask(ctx, r, Ping{1}); err != nil {
			t.Fatalf("ask %v after the signals: %v", r, err)
		}
	}
	if _, err := b.System().Ask(ctx, sup, actor.WhichChildren{}); err != nil {
		t.Fatalf("ask the supervisor after the signals: %v", err)
	}
	select {
	case err := <-asked:
		t.Fatalf("the pending Ask ended before its reply: %v", err)
	default:
	}
	close(release)
	if err := recv(t, asked); err != nil {
		t.Fatalf("the pending Ask: %v", err)
	}
	if st := b.Router().Stats(); st.Refused < 4 || st.DecodeErrors != 8 {
		t.Fatalf("%d signals refused, %d decode errors: want at least the 4 kills, and the 8 exits from no actor", st.Refused, st.DecodeErrors)
	}

	// Disconnecting fires the links the peer made, had any been made.
	peersDown := b.Router().Stats().PeersDown
	_ = hostile.Host().Network().ClosePeer(b.ID())
	waitFor(t, func() bool { return b.Router().Stats().PeersDown > peersDown })
	for _, r := range []actor.Ref{echoRef, worker} {
		if _, err := b.System().Ask(ctx, r, Ping{2}); err != nil {
			t.Fatalf("ask %v after the disconnection: %v", r, err)
		}
	}
	if _, err := b.System().Ask(ctx, sup, actor.WhichChildren{}); err != nil {
		t.Fatalf("ask the supervisor after the disconnection: %v", err)
	}
	for i, ch := range downs {
		select {
		case d := <-ch:
			t.Fatalf("target %d stopped: %+v", i, d)
		default:
		}
	}
}

// honestHello opens a stream of protocol p from n to `to` that introduces
// itself with n's real incarnation (a made-up one would be a restart of
// n: a Down for all of n's actors at `to`), for messages written by hand.
func honestHello(t *testing.T, n, to *peer.Node, p protocol.ID) *codec.FrameWriter {
	t.Helper()
	_, fw := rawWriterAs(t, n, to, p, true, n.Router().Incarnation())
	return fw
}

// TestUnknownTypesAreDeadLetters: a message of a type the receiving node
// does not know is a dead letter (an Ask fails at once with
// actor.ErrUnknownType) unless its actor opted in with
// actor.AcceptUnknownTypes, which receives it as a codec.Raw. Replies of
// unknown types still reach their Ask.
func TestUnknownTypesAreDeadLetters(t *testing.T) {
	a, b := pair(t)
	got := make(chan any, 4)
	typed := spawn(t, b, "typed", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) { got <- m; c.Reply(m); c.Receive(h) })
		c.Receive(h)
	})
	open := spawn(t, b, "open", func(c *actor.Context) {
		var h actor.Case
		h = actor.Any(func(m any) { got <- m; c.Reply(m); c.Receive(h) })
		c.Receive(h)
	}, actor.AcceptUnknownTypes())
	unknown := codec.Raw{Type: "elsewhere.Thing", Body: []byte{0x01}}
	ctx, cancel := askCtx()
	defer cancel()
	dead := b.System().DeadLetters()
	start := time.Now()
	if _, err := a.System().Ask(ctx, typed, unknown); !errors.Is(err, actor.ErrUnknownType) {
		t.Fatalf("ask of an unknown type to a typed actor: %v, want ErrUnknownType", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the refused Ask waited")
	}
	if st := b.Router().Stats(); st.UnknownTypes != 1 || b.System().DeadLetters() != dead+1 {
		t.Fatalf("unknown types %d, dead letters +%d: want 1 and 1", st.UnknownTypes, b.System().DeadLetters()-dead)
	}
	v, err := a.System().Ask(ctx, open, unknown)
	if err != nil {
		t.Fatalf("ask of an unknown type to an actor that takes them: %v", err)
	}
	if r, ok := recv(t, got).(codec.Raw); !ok || r.Type != unknown.Type {
		t.Fatalf("the open actor got %#v, want a codec.Raw of %q", r, unknown.Type)
	}
	// Its reply (a codec.Raw, unknown at a as well) reached the Ask.
	if r, ok := v.(codec.Raw); !ok || r.Type != unknown.Type {
		t.Fatalf("reply %#v, want a codec.Raw of %q", v, unknown.Type)
	}
	select {
	case m := <-got:
		t.Fatalf("the typed actor got %#v", m)
	default:
	}
}
