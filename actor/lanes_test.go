package actor

import (
	"fmt"
	"testing"
	"time"
)

// TestLaneSetRoundRobin: the lanes give one node of each sender peer (and
// of this peer, the nil Credit) in turn, each lane in its own order, and a
// lane that empties leaves the turn to the next.
func TestLaneSetRoundRobin(t *testing.T) {
	a, b := newCredit(0), newCredit(0)
	mk := func(msg string, size uint32, own owner) *node { return &node{msg: msg, size: size, own: own} }
	chain := func(ns ...*node) *node {
		for i := range len(ns) - 1 {
			ns[i].next = ns[i+1]
		}
		return ns[0]
	}
	l := laneSet{self: "me"}
	l.add(chain(mk("a1", 10, ownedByCredit(a)), mk("a2", 10, ownedByCredit(a)), mk("l1", 0, nil),
		mk("a3", 10, ownedByCredit(a)), mk("b1", 10, ownedByCredit(b))))
	var got []string
	for range 3 {
		got = append(got, l.pop().msg.(string))
	}
	l.add(chain(mk("b2", 10, ownedByCredit(b)), mk("l2", 0, nil)))
	for n := l.pop(); n != nil; n = l.pop() {
		if n.next != nil {
			t.Fatalf("%v popped with a next", n.msg)
		}
		got = append(got, n.msg.(string))
	}
	want := "[a1 l1 b1 a2 b2 l2 a3]" // emptied lanes come back at the end, in their arrival order
	if fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	if !l.empty() || len(l.byCr) != 0 {
		t.Fatalf("lanes left: ring %d, map %d", len(l.ring), len(l.byCr))
	}
}

// TestSharedActorServesPeersInTurn: a peer whose backlog waits in an
// actor's mailbox does not stand in front of another peer's messages, nor
// of this peer's: the actor handles them in turn, each peer's in order.
func TestSharedActorServesPeersInTurn(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	hold := make(chan struct{})
	got := make(chan string, 256)
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(Loop(Any(func(m any) {
			if m == "hold" {
				<-hold
				return
			}
			got <- m.(string)
		})))
	})
	s.Send(ref, "hold")
	flood, quiet := inboundFrom(s, newCredit(0)), inboundFrom(s, newCredit(0))
	for i := range 100 {
		flood.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: fmt.Sprint("f", i), Size: 100})
	}
	flood.Close()
	quiet.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: "q0", Size: 100})
	quiet.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: "q1", Size: 100})
	quiet.Close()
	s.Send(ref, "l0")
	close(hold)
	var order []string
	for range 103 {
		order = append(order, recv(t, got))
	}
	want := "[f0 q0 l0 f1 q1 f2 f3]"
	if fmt.Sprint(order[:7]) != want {
		t.Fatalf("first handled %v, want %s", order[:7], want)
	}
	for i, k := 0, 0; i < len(order); i++ {
		if order[i][0] == 'f' {
			if order[i] != fmt.Sprint("f", k) {
				t.Fatalf("flood out of order at %d: %v", i, order[i])
			}
			k++
		}
	}
}

// TestLaneTurnSendsTheReplies: when the turn passes to another peer's
// lane, what the actor sent so far goes out: a quiet peer's reply does
// not wait in the outbox while the actor handles a flood's backlog.
func TestLaneTurnSendsTheReplies(t *testing.T) {
	br := &batchRecorder{}
	s := newSys(t, WithPeer("me"), withRemote(br))
	hold := make(chan struct{})
	seen := make(chan bool, 1) // whether q0's reply was out when f1 was handled
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(Loop(Any(func(m any) {
			switch m {
			case "hold":
				<-hold
				return
			case "f1":
				out := false
				for _, o := range br.sent() {
					out = out || o.Corr == 1000
				}
				seen <- out
			}
			c.Reply(m)
		})))
	})
	s.Send(ref, "hold")
	flood, quiet := inboundFrom(s, newCredit(0)), inboundFrom(s, newCredit(0))
	for i := range 100 {
		flood.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: fmt.Sprint("f", i), Corr: uint64(i + 1), Size: 100})
	}
	flood.Close()
	quiet.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: "q0", Corr: 1000, Size: 100})
	quiet.Close()
	close(hold)
	if !recv(t, seen) {
		t.Fatal("the quiet peer's reply still waited in the outbox when the flood's next message was handled")
	}
}

// TestLostPeerSignalsAfterItsMessages: the Down and the exit signal this
// node makes itself when it loses a peer come after the messages of that
// peer's actors that the actor had already received (as Erlang's DOWN
// with noconnection does), not in this peer's lane ahead of them.
func TestLostPeerSignalsAfterItsMessages(t *testing.T) {
	s := newSys(t, WithPeer("me"), withRemote(&recordingRemote{}))
	far := mustRef(t, "them/x")
	ref, hold, got := spawnSignalRecorder(t, s, far)
	s.Send(ref, "hold")
	in := inboundFrom(s, newCredit(0))
	for i := range 10 {
		in.Add(&envelope{To: ref, From: far, Msg: fmt.Sprint("m", i), Size: 100})
	}
	in.Close()
	s.port.PeerDown("them")
	close(hold)
	var order []string
	for range 12 {
		order = append(order, recv(t, got))
	}
	for i, m := range order[:10] {
		if m != fmt.Sprint("m", i) {
			t.Fatalf("handled %v: a signal of the lost peer came before its messages", order)
		}
	}
}

// TestLanesSelectiveReceive: messages of a peer's lane that the current
// receive skips are saved in their order, and a later receive finds them
// before the rest of that lane.
func TestLanesSelectiveReceive(t *testing.T) {
	s := newSys(t, WithPeer("me"))
	hold := make(chan struct{})
	got := make(chan string, 64)
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(On(func(string) {
			<-hold
			c.Receive(On(func(int) { // skips the strings of both lanes
				c.Receive(Loop(Any(func(m any) { got <- fmt.Sprint(m) })))
			}))
		}))
	})
	s.Send(ref, "hold")
	a, b := inboundFrom(s, newCredit(0)), inboundFrom(s, newCredit(0))
	for i := range 6 {
		a.Add(&envelope{To: ref, From: mustRef(t, "them/x"), Msg: fmt.Sprint("a", i), Size: 100})
	}
	a.Close()
	b.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: "b0", Size: 100})
	b.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: 7, Size: 100})
	b.Add(&envelope{To: ref, From: mustRef(t, "others/y"), Msg: "b1", Size: 100})
	b.Close()
	close(hold)
	var order []string
	for range 8 {
		select {
		case m := <-got:
			order = append(order, m)
		case <-time.After(2 * time.Second):
			t.Fatalf("got only %v", order)
		}
	}
	var as, bs []string
	for _, m := range order {
		if m[0] == 'a' {
			as = append(as, m)
		} else {
			bs = append(bs, m)
		}
	}
	if fmt.Sprint(as) != "[a0 a1 a2 a3 a4 a5]" || fmt.Sprint(bs) != "[b0 b1]" {
		t.Fatalf("handled %v: a lane's order was lost", order)
	}
}

// TestLostPeerSignalsBeforeItsLaterMessages: a Down and an exit this node
// makes for a lost peer's actor while that peer has no messages waiting
// come before the messages of that peer that arrive after them (the loss
// protocol's Down before the first message after a gap), even though
// they are charged to no Credit and the messages are.
func TestLostPeerSignalsBeforeItsLaterMessages(t *testing.T) {
	s := newSys(t, WithPeer("me"), withRemote(&recordingRemote{}))
	far := mustRef(t, "them/x")
	ref, hold, got := spawnSignalRecorder(t, s, far)
	s.Send(ref, "hold")
	s.port.PeerDown("them")
	s.Send(ref, "local") // this peer's lane, beside theirs
	in := inboundFrom(s, newCredit(0))
	for i := range 10 {
		in.Add(&envelope{To: ref, From: far, Msg: fmt.Sprint("m", i), Size: 100})
	}
	in.Close()
	close(hold)
	var order []string
	for range 13 {
		order = append(order, recv(t, got))
	}
	pos := map[string]int{}
	for i, m := range order {
		pos[m] = i
	}
	if pos["down"] > pos["m0"] || pos["exit"] > pos["m0"] {
		t.Fatalf("handled %v: a message of the lost peer came before its signals", order)
	}
	for i := 1; i < 10; i++ {
		if pos[fmt.Sprint("m", i)] < pos[fmt.Sprint("m", i-1)] {
			t.Fatalf("handled %v: the peer's messages out of order", order)
		}
	}
}

// TestLaneSetOwnPeerDownStaysInOwnLane: a Down or exit signal of an actor
// of this peer (charged to no Credit, as this peer's messages are) goes to
// this peer's lane behind that actor's messages, not to a lost peer's lane
// of its own that the turn could reach first.
func TestLaneSetOwnPeerDownStaysInOwnLane(t *testing.T) {
	a := newCredit(0)
	me, far := mustRef(t, "me/a"), mustRef(t, "them/x")
	chain := func(ns ...*node) *node {
		for i := range len(ns) - 1 {
			ns[i].next = ns[i+1]
		}
		return ns[0]
	}
	l := laneSet{self: "me"}
	l.add(chain(&node{msg: "q0", size: 10, own: ownedByCredit(a), from: far},
		&node{msg: "l0", from: me}, &node{msg: "l1", from: me},
		&node{msg: downSignal{}, from: me, kind: kindSignal},
		&node{msg: exitSignal{}, from: me, kind: kindSignal}))
	var got []string
	for n := l.pop(); n != nil; n = l.pop() {
		switch n.msg.(type) {
		case downSignal:
			got = append(got, "down")
		case exitSignal:
			got = append(got, "exit")
		default:
			got = append(got, n.msg.(string))
		}
	}
	if want := "[q0 l0 l1 down exit]"; fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	if !l.empty() || len(l.byCr) != 0 || len(l.byPeer) != 0 {
		t.Fatalf("lanes left: ring %d, byCr %d, byPeer %d", len(l.ring), len(l.byCr), len(l.byPeer))
	}
}

// spawnSignalRecorder spawns an actor that traps exits, monitors and
// links far, and writes "down", "exit" and each string it gets to got,
// but blocks on "hold" until hold is closed; it returns once the actor
// has made its monitor and link.
func spawnSignalRecorder(t *testing.T, s *System, far Ref) (ref Ref, hold chan struct{}, got chan string) {
	t.Helper()
	hold, got = make(chan struct{}), make(chan string, 64)
	ready := make(chan struct{})
	ref = mustSpawn(t, s, "", func(c *Context) {
		c.TrapExit(true)
		c.Monitor(far)
		c.Link(far)
		close(ready)
		forever(c, func() []Case {
			return []Case{
				On(func(d Down) { got <- "down" }),
				On(func(e Exit) { got <- "exit" }),
				On(func(m string) {
					if m == "hold" {
						<-hold
						return
					}
					got <- m
				}),
			}
		})
	})
	<-ready
	return ref, hold, got
}
