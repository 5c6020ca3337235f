package routing

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// budgetRig is a router whose peers have a budget of 256 KiB, with two
// actors: "fast" passes every string on; "slow" saves them until the
// test opens its gate, then passes them on as well.
type budgetRig struct {
	r          *Router
	sys        *actor.System
	fast, slow chan string
	open       func()
}

func newBudgetRig(t *testing.T, backlog int64) (*budgetRig, *rawFrames) {
	return newBudgetRigGrace(t, backlog, 0)
}

// newBudgetRigGrace is newBudgetRig with a pause grace of grace (0: the
// default).
func newBudgetRigGrace(t *testing.T, backlog int64, grace time.Duration) (*budgetRig, *rawFrames) {
	t.Helper()
	quiet := testutil.QuietLogger()
	h, r, sys := testPeerTuned(t, config{Logger: quiet, PeerBudget: 256 << 10, PauseGrace: grace}, []actor.Option{transport.WithRemoteBacklog(backlog)})
	g := &budgetRig{r: r, sys: sys, fast: make(chan string, 8192), slow: make(chan string, 8192)}
	if _, err := sys.Spawn("fast", func(c *actor.Context) {
		var h actor.Case
		h = actor.On(func(s string) { g.fast <- s; c.Receive(h) })
		c.Receive(h)
	}); err != nil {
		t.Fatal(err)
	}
	gate, err := sys.Spawn("", func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) })
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	if _, err := sys.Spawn("slow", func(c *actor.Context) {
		c.Monitor(gate)
		close(ready)
		c.Receive(actor.On(func(actor.Down) {
			var h actor.Case
			h = actor.On(func(s string) { g.slow <- s; c.Receive(h) })
			c.Receive(h)
		}))
	}); err != nil {
		t.Fatal(err)
	}
	<-ready
	g.open = func() { sys.Send(gate, "open") }
	rf := newRawFrames(t, h)
	rf.send(codec.KindSystem, typeHello, helloBody{Incarnation: 7})
	return g, rf
}

// flood writes n strings of about 1 KiB, numbered from 0, to actor to.
func (rf *rawFrames) flood(to string, n int) error {
	for i := range n {
		typ, body, err := rf.reg.Encode(numbered(i))
		if err != nil {
			return err
		}
		if err := rf.fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: to, FromName: "src", Type: typ, Body: body}); err != nil {
			return err
		}
	}
	return rf.fw.Flush()
}

func numbered(i int) string { return strings.Repeat("x", 1000) + "#" + strconv.Itoa(i) }

// held returns what the actors hold of the budget of rf's peer.
func (g *budgetRig) held(rf *rawFrames) int64 {
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	if b := g.r.budgets[rf.h.ID()]; b != nil {
		return b.credit.Held()
	}
	return 0
}

// waitCond polls cond (no event tells of it) for 20 s at most.
func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, what, cond)
}

func recvString(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("no message within 20 s")
		return ""
	}
}

// TestPeerAtItsBudgetPauses: a peer whose messages its actors do not
// handle (one actor here, allowed to hold it all) has its stream paused
// at its budget: the actors hold about the budget however much more the
// peer sends; another peer is served meanwhile; once the actor handles
// its mailbox, the stream goes on and every message arrives, in order.
func TestPeerAtItsBudgetPauses(t *testing.T) {
	g, rf := newBudgetRig(t, 1<<30)
	const n = 4096 // 4 MiB: 16 budgets
	sent := make(chan error, 1)
	go func() { sent <- rf.flood("slow", n) }()
	waitCond(t, "the stream paused", func() bool { return g.r.Stats().Paused > 0 })
	budget, batch := int64(256<<10), int64(maxInboundBatch*(1100+nodeCost))
	if h := g.held(rf); h < budget || h > budget+batch {
		t.Fatalf("held %d bytes, want from the budget %d to one batch more", h, budget)
	}
	other := newRawFrames(t, g.r.h)
	other.send(codec.KindSystem, typeHello, helloBody{Incarnation: 9})
	if err := other.flood("fast", 3); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if s := recvString(t, g.fast); s != numbered(i) {
			t.Fatalf("fast got %.20q, want message %d", s, i)
		}
	}
	if h := g.held(rf); h > budget+batch {
		t.Fatalf("held %d bytes after another peer's messages, want at most %d", h, budget+batch)
	}
	g.open()
	for i := range n {
		if s := recvString(t, g.slow); s != numbered(i) {
			t.Fatalf("slow got %.20q..., want message %d", s[len(s)-8:], i)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if d := g.sys.DeadLetters(); d != 0 {
		t.Fatalf("%d dead letters, want none", d)
	}
}

// TestOneHoarderDoesNotPauseItsPeer: with an actor's backlog a quarter of
// its peer's budget (the defaults' ratio), an actor that never handles
// what a peer sends it holds its backlog and no more: the rest are dead
// letters with actor.ErrMailboxFull, and the peer's stream never pauses,
// so its messages to other actors go on arriving.
func TestOneHoarderDoesNotPauseItsPeer(t *testing.T) {
	g, rf := newBudgetRig(t, 64<<10)
	const n = 1024
	if err := rf.flood("slow", n); err != nil {
		t.Fatal(err)
	}
	if err := rf.flood("fast", 1); err != nil {
		t.Fatal(err)
	}
	if s := recvString(t, g.fast); s != numbered(0) {
		t.Fatalf("fast got %.20q, want message 0", s)
	}
	if st := g.r.Stats(); st.Paused != 0 {
		t.Fatalf("the stream paused %d times", st.Paused)
	}
	// fast's message stays charged until its activation ends.
	if h := g.held(rf); h > 64<<10+1200 {
		t.Fatalf("held %d bytes, want at most the backlog and fast's message", h)
	}
	kept := n - int(g.sys.MailboxOverflows())
	if kept < 50 || kept > 64 {
		t.Fatalf("%d messages kept, want the backlog's worth (about 58)", kept)
	}
	g.open()
	for i := range kept {
		if s := recvString(t, g.slow); s != numbered(i) {
			t.Fatalf("slow got %.20q, want message %d", s, i)
		}
	}
}

// TestPausedPeerShedsSavedMessages: an actor that saves what a peer sends
// until a message that comes behind the pause would hold the peer paused
// for good; after the pause grace its saved messages are shed (dead
// letters with actor.ErrMailboxFull), the stream goes on, and the
// message it waits for arrives, followed by what it kept, in order.
func TestPausedPeerShedsSavedMessages(t *testing.T) {
	g, rf := newBudgetRigGrace(t, 1<<30, 100*time.Millisecond)
	got := make(chan string, 4096)
	if _, err := g.sys.Spawn("waiter", func(c *actor.Context) {
		c.Receive(actor.OnWhen(func(s string) bool { return s == "go" }, func(s string) {
			got <- s
			var h actor.Case
			h = actor.On(func(s string) { got <- s; c.Receive(h) })
			c.Receive(h)
		}))
	}); err != nil {
		t.Fatal(err)
	}
	const n = 1024 // 1 MiB: 4 budgets
	sent := make(chan error, 1)
	go func() {
		if err := rf.flood("waiter", n); err != nil {
			sent <- err
			return
		}
		typ, body, err := rf.reg.Encode("go")
		if err == nil {
			err = rf.fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "waiter", FromName: "src", Type: typ, Body: body})
		}
		if err == nil {
			err = rf.fw.Flush()
		}
		sent <- err
	}()
	if s := recvString(t, got); s != "go" {
		t.Fatalf("got %.20q first, want go", s)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	st := g.r.Stats()
	if st.Paused == 0 || st.Shed == 0 {
		t.Fatalf("paused %d times, shed %d times: want both", st.Paused, st.Shed)
	}
	shed := int(g.sys.MailboxOverflows())
	if shed == 0 || shed > n {
		t.Fatalf("%d messages shed, want some of %d", shed, n)
	}
	last := -1
	for range n - shed {
		s := recvString(t, got)
		i, err := strconv.Atoi(s[strings.IndexByte(s, '#')+1:])
		if err != nil || i <= last {
			t.Fatalf("got %.20q after message %d: want later messages in order", s, last)
		}
		last = i
	}
}

// TestControlStreamPausesLater: with a peer's actors holding its whole
// budget, its control stream is still read (signals and replies reach
// actors that take them at once) while a user stream pauses, until the
// pause grace sheds the saved messages that hold the budget.
func TestControlStreamPausesLater(t *testing.T) {
	g, rf := newBudgetRigGrace(t, 1<<30, 100*time.Millisecond)
	b := g.r.budgetFor(rf.h.ID())
	defer g.r.budgetDone(rf.h.ID(), b)
	in := g.r.sys.NewInbound()
	in.SetCredit(b.credit)
	slow, err := actor.ParseRef(g.r.h.ID().String() + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	from, err := actor.ParseRef(rf.h.ID().String() + "/src")
	if err != nil {
		t.Fatal(err)
	}
	in.Add(&transport.Envelope{To: slow, From: from, Msg: "held", Size: 256 << 10})
	in.Close()
	if h := b.credit.Held(); h != 256<<10 {
		t.Fatalf("held %d, want the budget", h)
	}
	ctl := &inbound{r: g.r, peer: b, ctl: true, remote: rf.h.ID()}
	if err := ctl.backpressure(); err != nil || g.r.Stats().Paused != 0 {
		t.Fatalf("the control stream paused (%v, %d pauses) under a quarter more than the budget", err, g.r.Stats().Paused)
	}
	user := &inbound{r: g.r, peer: b, remote: rf.h.ID()}
	if err := user.backpressure(); err != nil {
		t.Fatal(err)
	}
	if st := g.r.Stats(); st.Paused != 1 || st.Shed != 1 || b.credit.Held() > 128<<10 {
		t.Fatalf("paused %d, shed %d, held %d: want one pause ended by one shed", st.Paused, st.Shed, b.credit.Held())
	}
	if n := g.sys.MailboxOverflows(); n != 1 {
		t.Fatalf("%d messages shed, want 1", n)
	}
}
