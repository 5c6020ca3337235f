package routing

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// Retiring links: none loses a message, busy ones go later, every
// unreachable one goes.

// A link retired while senders race to it loses nothing: a push that
// finds it retired goes to the peer's new link. The peer is unreachable,
// so every message is given up, exactly once.
func TestRetiredLinksLoseNoMessage(t *testing.T) {
	const senders, rounds = 4, 100 // four messages a sender and round
	notSent := make(chan struct{}, 1+senders*rounds*4)
	logger := slog.New(onMessage{"routing: message not sent", notSent})
	fast := timings{backoffUnit: 50 * time.Microsecond} // writers give up and go idle often
	_, r, _ := testPeerTuned(t, config{Logger: logger, timings: fast}, nil)
	other := testhost.NewHost(t, libp2p.NoListenAddrs)
	peerStr := other.ID().String()
	_ = other.Close() // no address known: every dial fails at once
	to, _ := actor.NewRef(peerStr, "x")

	// An idle link is retired, and the next message makes a new one.
	first, err := r.link(peerStr)
	if err != nil {
		t.Fatal(err)
	}
	// Its writers may be busy a moment yet (a first round that finds
	// nothing): retire until it takes.
	for deadline := time.Now().Add(10 * time.Second); !didRetire(r.retire(peerStr)); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the idle link could not be retired")
		}
	}
	if !first.retired.Load() || first.user.q.push(&transport.Envelope{To: to, Msg: "late"}) {
		t.Fatal("the idle link was not retired, or its queue still takes messages")
	}
	if err := r.Deliver(to, actor.Ref{}, "m", 0, false); err != nil {
		t.Fatal(err)
	}
	if l, _ := r.link(peerStr); l == first {
		t.Fatal("a message went to the retired link")
	}

	// A link retired between a sender's lookup and its push: every entry
	// point takes the peer's new link instead.
	givenUp := 1
	for _, send := range []struct {
		name string
		f    func() error
	}{
		{"Deliver", func() error { return r.Deliver(to, actor.Ref{}, "m", 0, false) }},
		{"DeliverBatch", func() error {
			_, err := r.DeliverBatch(actor.Ref{}, []transport.Outbound{{To: to, Msg: "m"}, {To: to, Msg: "m"}})
			return err
		}},
		{"DeliverCtx", func() error { return r.DeliverCtx(context.Background(), transport.Envelope{To: to, Msg: "m"}) }},
		{"DeliverDirect", func() error { return r.DeliverDirect(context.Background(), to, actor.Ref{}, "m", 0, false) }},
	} {
		for k := range givenUp { // the link goes idle
			select {
			case <-notSent:
			case <-time.After(10 * time.Second):
				t.Fatalf("before %s: %d of %d messages given up", send.name, k, givenUp)
			}
		}
		var under *link
		r.hooks.linkFound = func(l *link) {
			for deadline := time.Now().Add(10 * time.Second); under == nil && !didRetire(r.retire(peerStr)); runtime.Gosched() {
				if time.Now().After(deadline) { // its writers never slept
					t.Fatalf("%s: the link could not be retired", send.name)
				}
			}
			under = l
		}
		err := send.f()
		r.hooks.linkFound = nil
		if err != nil || under == nil || !under.retired.Load() {
			t.Fatalf("%s with its link retired under it: %v (retired %v)", send.name, err, under != nil && under.retired.Load())
		}
		if l, _ := r.link(peerStr); l == under {
			t.Fatalf("%s: the retired link is still the peer's", send.name)
		}
		givenUp = 1
		if send.name == "DeliverBatch" {
			givenUp = 2
		}
	}
	for range givenUp {
		select {
		case <-notSent:
		case <-time.After(10 * time.Second):
			t.Fatal("a message given up was not reported")
		}
	}

	// Rounds of four senders, each round given up entirely before the
	// next, so that the link goes idle between rounds; meanwhile another
	// goroutine retires it whenever it can, racing the next round.
	stop, retired := make(chan struct{}), make(chan int)
	var nRetired atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				retired <- int(nRetired.Load())
				return
			default:
				if didRetire(r.retire(peerStr)) {
					nRetired.Add(1)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitGivenUp := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-notSent:
			case <-ctx.Done():
				t.Fatalf("%d messages given up; stats %+v", r.Stats().Undeliverable, r.Stats())
			}
		}
	}
	// The link is idle only for a moment between rounds, which a loaded
	// machine may let the retirer miss: more rounds until it retired one.
	round, extraUntil := 0, time.Now().Add(15*time.Second) // within ctx's 30 s
	for ; round < rounds || (nRetired.Load() == 0 && time.Now().Before(extraUntil)); round++ {
		var wg sync.WaitGroup
		for g := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, batchErr := r.DeliverBatch(actor.Ref{}, []transport.Outbound{{To: to, Msg: "m"}, {To: to, Msg: "m"}})
				for _, err := range []error{
					r.Deliver(to, actor.Ref{}, "m", 0, false),
					batchErr,
					r.DeliverCtx(ctx, transport.Envelope{To: to, Msg: transport.ExitSignal{}}), // the control queue
				} {
					if err != nil {
						t.Errorf("round %d, sender %d: %v", round, g, err)
					}
				}
			}()
		}
		wg.Wait()
		waitGivenUp(senders * 4)
	}
	close(stop)
	if n := <-retired; n == 0 {
		t.Errorf("no link retired in %d rounds: the race did not run", round)
	} else {
		t.Logf("%d links retired in %d rounds", n, round)
	}
	want := 1 + 5 + senders*round*4
	if got := r.Stats().Undeliverable; got != uint64(want) {
		t.Fatalf("%d messages given up, want %d", got, want)
	}
}

// didRetire is the first result of Router.retire.
func didRetire(retired, _ bool) bool { return retired }

// A link that was busy when its peer left is tried again after 1, 5 and
// 30 s, until it is retired; then no more. One that gave messages up as
// unreachable is tried after 1 s when its peer is not connected; when it
// is, its disconnection will tell. The peer table alone, no hosts.
func TestBusyLinksAreRetiredLater(t *testing.T) {
	tab := newPeerTable(nil)
	tab.delays = defaultTimings().retireDelays
	start := time.Unix(0, 0)
	now := start
	busyFor := map[libp2ppeer.ID]int{"a": 2, "b": 99, "c": 0} // tries that find it busy
	var tries []string
	perform := func(acts []peerAction) {
		slices.SortFunc(acts, func(x, y peerAction) int { return strings.Compare(string(x.peer), string(y.peer)) })
		for _, a := range acts {
			if a.kind != actRetire {
				continue
			}
			tries = append(tries, fmt.Sprintf("%s@%v", string(a.peer), now.Sub(start)))
			if busyFor[a.peer]--; busyFor[a.peer] >= 0 {
				tab.retireBusy(a.peer, a.next, now)
			}
		}
	}
	perform(tab.gone(nil, "a"))
	perform(tab.gone(nil, "b"))
	tab.linkUnreachable("b", false, now) // pending already: one retry
	tab.linkUnreachable("c", false, now)
	tab.linkUnreachable("d", true, now)
	for next, ok := tab.nextRetire(); ok; next, ok = tab.nextRetire() {
		now = next
		perform(tab.retiresDue(nil, now))
	}
	want := []string{"a@0s", "b@0s", "a@1s", "b@1s", "c@1s", "a@6s", "b@6s", "b@36s"}
	if !slices.Equal(tries, want) {
		t.Fatalf("tries %v, want %v", tries, want)
	}
	if busyFor["a"] != -1 || busyFor["c"] != -1 {
		t.Fatalf("a or c tried again after it was retired: %v", busyFor)
	}
}

// Every link that gave its messages up as unreachable is retired once
// idle, however many give up at once: none keeps its goroutines and
// buffers until Close.
func TestEveryUnreachableLinkIsRetired(t *testing.T) {
	const peers = 200
	_, r, sys := testRouterTimed(t, timings{backoffUnit: 50 * time.Microsecond}) // writers give up at once
	ids := make([]libp2ppeer.ID, 2*peers)
	for i := range ids {
		ids[i] = testhost.NewPeerID(t)
	}
	links := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.links)
	}
	allRetired := func(what string) {
		t.Helper()
		testutil.EventuallyNil(t, 20*time.Second, func() error {
			if n := links(); n > 0 {
				return fmt.Errorf("%s: %d of %d links still there; %d messages given up", what, n, peers, r.Stats().Undeliverable)
			}
			return nil
		})
	}
	// Links that give up all at once, faster than the router's
	// goroutine takes the news.
	for _, id := range ids[:peers] {
		if _, err := r.link(id.String()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[:peers] {
		r.retireLater(id)
	}
	allRetired("a burst")
	// Links that give messages up.
	for _, id := range ids[peers:] {
		to, _ := actor.NewRef(id.String(), "x")
		if err := r.Deliver(to, actor.Ref{}, "m", 0, false); err != nil {
			t.Fatal(err)
		}
	}
	allRetired("messages given up")
	if got := sys.DeadLetters(); got != peers {
		t.Fatalf("%d dead letters, want %d", got, peers)
	}
}

// A link still busy when its peer left is tried again later, by the
// router's own driver (watchPeers performing actRetire, which reports
// the busy link back to the peer table), and retired once idle.
func TestBusyLinkOfADepartedPeerIsRetiredLater(t *testing.T) {
	quick := timings{retireDelays: [3]time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}}
	hA, r, _ := testRouterTimed(t, quick)
	hB := testhost.NewHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hA.Connect(ctx, libp2ppeer.AddrInfo{ID: hB.ID(), Addrs: hB.Addrs()}); err != nil {
		t.Fatal(err)
	}
	l := newLink(r, hB.ID(), hB.ID().String()) // writers not started: busy while a message is queued
	r.mu.Lock()
	r.links[l.peerStr] = l
	r.mu.Unlock()
	if !l.user.q.pushBelow("x", "", "m", 0, false, l.user.q.max) {
		t.Fatal("queue full")
	}
	_ = hA.Network().ClosePeer(hB.ID())
	// Nothing signals the table's internal state or a link's retirement:
	// both waits poll, each bounded by its own deadline.
	pending := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		_, ok := r.peers.retries[hB.ID()]
		return ok
	}
	testutil.Eventually(t, 5*time.Second, "a retry pending for a link busy when its peer left", pending)
	l.user.q.takeBatch(nil) // the message, written
	l.user.q.takeBatch(nil) // then none: the writer gives its right up, idle
	testutil.Eventually(t, 5*time.Second, "the link, idle since, retired", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		_, there := r.links[l.peerStr]
		return !there
	})
}

// A bare router (newSender: no host, a zero peer table, no watchPeers)
// takes a link's news that it gave messages up as unreachable without
// a panic: the retry is recorded, and nothing runs it.
func TestRetireLaterOnABareRouter(t *testing.T) {
	r, _, _, _ := newSender(t)
	id := testhost.NewPeerID(t)
	r.retireLater(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.peers.retries[id]; !ok {
		t.Fatal("no retry recorded")
	}
}
