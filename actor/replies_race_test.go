package actor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// The reply table's outcomes: whatever ends a System.Ask (its reply, its
// context, PeerDown, Shutdown) ends it once and leaves nothing in the
// table, and a reply that names the wrong Ask completes none.

// waiting counts the System.Asks in s's reply table.
func waiting(s *System) int {
	n := 0
	for i := range s.replies.shards {
		sh := &s.replies.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

type askResult struct {
	v   any
	err error
}

// askAsync starts s.Ask(ctx, to, msg) and returns where its result comes.
func askAsync(ctx context.Context, s *System, to Ref, msg any) <-chan askResult {
	done := make(chan askResult, 1)
	go func() {
		v, err := s.Ask(ctx, to, msg)
		done <- askResult{v, err}
	}()
	return done
}

// A cancelled Ask leaves the table at once; its reply, when it comes,
// is a dead letter addressed to the Ask's sender, for ErrNoSuchActor.
func TestCancelledSystemAskLeavesTheTable(t *testing.T) {
	letters := make(chan DeadLetter, 4)
	rr := &sentRemote{sent: make(chan envelope, 4)}
	s := newSys(t, WithPeer("me"), withRemote(rr), WithDeadLetterHook(func(d DeadLetter) { letters <- d }))
	far := mustRef(t, "them/x")
	ctx, cancel := context.WithCancel(context.Background())
	done := askAsync(ctx, s, far, "q")
	req := recv(t, rr.sent)
	if n := waiting(s); n != 1 {
		t.Fatalf("%d Asks in the table while one waits", n)
	}
	cancel()
	if r := recv(t, done); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled ask: %v, %v; want context.Canceled", r.v, r.err)
	}
	if n := waiting(s); n != 0 {
		t.Fatalf("%d Asks in the table after the only one was cancelled", n)
	}
	s.port.Deliver(envelope{To: req.From, From: far, Msg: "late", Corr: req.Corr, Reply: true})
	d := recv(t, letters)
	if d.Msg != "late" || d.To != req.From || !errors.Is(d.Reason, ErrNoSuchActor) {
		t.Fatalf("late reply's dead letter %+v, want \"late\" to %v for ErrNoSuchActor", d, req.From)
	}
}

// A reply that another peer addresses to the Ask's sender under another
// correlation ID, one under the Ask's correlation ID to another generated
// name, and a user message (no reply) with both right complete nothing:
// only the real reply does.
func TestForgedRepliesCompleteNoAsk(t *testing.T) {
	var dead atomic.Int32
	rr := &sentRemote{sent: make(chan envelope, 4)}
	s := newSys(t, WithPeer("me"), withRemote(rr), WithDeadLetterHook(func(DeadLetter) { dead.Add(1) }))
	far := mustRef(t, "them/x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := askAsync(ctx, s, far, "q")
	req := recv(t, rr.sent)
	other := Ref{s: s.genRef(0)}
	for _, e := range []envelope{
		{To: req.From, From: far, Msg: "wrong corr", Corr: req.Corr ^ 1, Reply: true},
		{To: other, From: far, Msg: "wrong name", Corr: req.Corr, Reply: true},
		{To: req.From, From: far, Msg: "not a reply", Corr: req.Corr},
	} {
		s.port.Deliver(e) // handled (completed or dead) before it returns
		if n := waiting(s); n != 1 {
			t.Fatalf("%q completed the Ask (%d left waiting)", e.Msg, n)
		}
	}
	if n := dead.Load(); n != 3 {
		t.Fatalf("%d dead letters, want the 3 forged replies", n)
	}
	s.port.Deliver(envelope{To: req.From, From: far, Msg: "pong", Corr: req.Corr, Reply: true})
	if r := recv(t, done); r.err != nil || r.v != "pong" {
		t.Fatalf("ask: %v, %v; want pong", r.v, r.err)
	}
}

// The reply and the peer's departure race: the Ask ends once, with one of
// them, the other is at most one dead letter, and the table and the
// remote index are empty after.
func TestReplyRacingPeerDownEndsTheAskOnce(t *testing.T) {
	var dead atomic.Int32
	rr := &sentRemote{sent: make(chan envelope, 4)}
	s := newSys(t, WithPeer("me"), withRemote(rr), WithDeadLetterHook(func(DeadLetter) { dead.Add(1) }))
	far := mustRef(t, "them/x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var replied, downed int
	for range 200 {
		before := dead.Load()
		done := askAsync(ctx, s, far, "q")
		req := recv(t, rr.sent)
		var wg sync.WaitGroup
		wg.Go(func() {
			s.port.Deliver(envelope{To: req.From, From: far, Msg: "pong", Corr: req.Corr, Reply: true})
		})
		wg.Go(func() { s.port.PeerDown("them") })
		r := recv(t, done)
		wg.Wait()
		switch {
		case r.err == nil && r.v == "pong":
			replied++
		case errors.Is(r.err, ErrNodeDown):
			downed++
		default:
			t.Fatalf("ask: %v, %v; want pong or ErrNodeDown", r.v, r.err)
		}
		if n := dead.Load() - before; n > 1 {
			t.Fatalf("%d dead letters for one Ask's reply and PeerDown, want at most 1", n)
		}
		if n := waiting(s); n != 0 {
			t.Fatalf("%d Asks in the table after the Ask returned", n)
		}
		if n := edges(s, edgeAsk); n != 0 {
			t.Fatalf("%d Asks indexed after the Ask returned", n)
		}
	}
	t.Logf("%d replied, %d ErrNodeDown", replied, downed)
}

// Asks waiting when Shutdown runs end with ErrShutdown, or ErrClosed when
// they met it half-way; the next Ask is refused with ErrClosed; none waits
// on, and the table is empty after.
func TestSystemAsksRacingShutdown(t *testing.T) {
	rr := &sentRemote{sent: make(chan envelope, 64)} // at most 2 requests per asker
	s, err := New(WithPeer("me"), withRemote(rr), WithLogger(testutil.QuietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	far := mustRef(t, "them/x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const askers = 16
	errs := make(chan error, askers)
	for range askers {
		go func() {
			_, err := s.Ask(ctx, far, "q")
			if !errors.Is(err, ErrShutdown) && !errors.Is(err, ErrClosed) {
				errs <- err
				return
			}
			if _, err := s.Ask(ctx, far, "q"); !errors.Is(err, ErrClosed) {
				errs <- err
				return
			}
			errs <- nil
		}()
	}
	for range askers { // every asker waits
		recv(t, rr.sent)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range askers {
		if err := recv(t, errs); err != nil {
			t.Fatalf("ask racing Shutdown: %v, want ErrShutdown or ErrClosed, then ErrClosed", err)
		}
	}
	if n := waiting(s); n != 0 {
		t.Fatalf("%d Asks in the table after Shutdown", n)
	}
}
