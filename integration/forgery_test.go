package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

// What a hostile peer cannot forge: ask replies, Downs, monitors of
// another peer's ID.

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
	seq, _, _ := strings.Cut(strings.TrimPrefix(waiter.Name(), "$"), ".") // "$<seq>.<slot>"
	id, err := strconv.ParseUint(seq, 36, 64)
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
