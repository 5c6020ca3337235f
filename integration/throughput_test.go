package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
	"github.com/troupe-mesh/troupe/routing"
)

// Many messages between two peers: order, write-through beside sends,
// lookups that silent peers do not hold up.

func TestMillionMessagesInOrder(t *testing.T) {
	total := 1_000_000
	if testing.Short() || raceEnabled {
		total = 100_000
	}
	const window = 10_000
	a, b := pair(t)
	result := make(chan error, 1)
	sink := spawn(t, b, "sink", batchSink(total, window, result))
	acked := make(chan struct{})
	spawn(t, a, "source", batchSource(sink, total, window, acked))
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("timed out; stats a=%+v b=%+v", a.Router().Stats(), b.Router().Stats())
	}
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		t.Fatal("the last Ack did not reach the source")
	}
	if dl := a.System().DeadLetters(); dl != 0 {
		t.Fatalf("%d dead letters on the sender", dl)
	}
}

// batchSink expects Batch{0} to Batch{total-1} in order, replies Ack{n}
// after every window, and reports on result once all came, or at the
// first missing or reordered one.
func batchSink(total, window int, result chan<- error) actor.Behavior {
	return func(c *actor.Context) {
		next := 0
		var h actor.Case
		h = actor.On(func(m Batch) {
			if m.Seq != next {
				result <- errors.New("out of order or missing")
				return
			}
			next++
			if next%window == 0 {
				c.Reply(Ack{next})
			}
			if next == total {
				result <- nil
				return
			}
			c.Receive(h)
		})
		c.Receive(h)
	}
}

// batchSource sends total Batches to sink, a window at a time, the next
// window on each Ack, and closes acked on the last Ack.
func batchSource(sink actor.Ref, total, window int, acked chan<- struct{}) actor.Behavior {
	return func(c *actor.Context) {
		sent := 0
		var burst func()
		burst = func() {
			for range window {
				c.Send(sink, Batch{sent})
				sent++
			}
			if sent == total { // the last Ack comes too: wait for it
				c.Receive(actor.On(func(Ack) { close(acked) }))
				return
			}
			c.Receive(actor.On(func(Ack) { burst() }))
		}
		burst()
	}
}

// Plain code's remote Asks write their request on the asker's goroutine
// when the link's writer sleeps (routing.Router.DeliverDirect). Mixed with
// an actor's stream of sends and with other askers on the same link,
// nothing is lost, duplicated or reordered, and nothing waits for a
// wake-up that never comes.
func TestPlainAsksWriteThroughAlongsideSends(t *testing.T) {
	a, b := pair(t)
	echoRef := spawn(t, b, "echo", echo)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One asker alone: the writer sleeps between round trips, so the
	// requests are written through.
	for i := range 50 {
		if v, err := a.System().Ask(ctx, echoRef, Ping{i}); err != nil || v != (Pong{i}) {
			t.Fatalf("ask %d: %v, %v", i, v, err)
		}
	}
	through := a.Router().Stats().WrittenThrough
	if through == 0 {
		t.Fatalf("no request written through: %+v", a.Router().Stats())
	}
	// These Asks leave the write to the writer: one with less than a
	// second left (a write its deadline cut short would break the stream
	// for all), and one whose context can be cancelled but has no deadline
	// (a cancellation must end the Ask at once, and could not end a write).
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"short", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 900*time.Millisecond) }},
		{"cancellable", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
	} {
		for i := range 5 {
			actx, cancel := c.ctx()
			v, err := a.System().Ask(actx, echoRef, Ping{i})
			cancel()
			if err != nil || v != (Pong{i}) {
				t.Fatalf("%s ask %d: %v, %v", c.name, i, v, err)
			}
		}
		if got := a.Router().Stats().WrittenThrough; got != through {
			t.Fatalf("%d %s asks written through", got-through, c.name)
		}
	}
	// One that can never end (context.Background) is written through.
	if v, err := a.System().Ask(context.Background(), echoRef, Ping{7}); err != nil || v != (Pong{7}) {
		t.Fatalf("ask without a deadline: %v, %v", v, err)
	}
	if got := a.Router().Stats().WrittenThrough; got != through+1 {
		t.Fatalf("%d asks that cannot end written through, want 1", got-through)
	}
	// Four askers and an actor's windowed stream of sends at once.
	total, window := 40_000, 2_000
	if raceEnabled {
		total = 10_000
	}
	result := make(chan error, 1)
	sink := spawn(t, b, "sink", batchSink(total, window, result))
	acked := make(chan struct{})
	spawn(t, a, "source", batchSource(sink, total, window, acked))
	askErrs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range 300 {
				n := g*1000 + i
				v, err := a.System().Ask(ctx, echoRef, Ping{n})
				if err != nil || v != (Pong{n}) {
					askErrs <- fmt.Errorf("asker %d, ask %d: %v, %v", g, i, v, err)
					return
				}
			}
			askErrs <- nil
		}()
	}
	for range 4 {
		if err := recv(t, askErrs); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatalf("sends timed out; stats a=%+v b=%+v", a.Router().Stats(), b.Router().Stats())
	}
	recv(t, acked)
	if dl := a.System().DeadLetters(); dl != 0 {
		t.Fatalf("%d dead letters on the asking side", dl)
	}
}

// TestWhereisIsNotHeldUpBySilentPeers: Whereis asks the connected peers
// at the same time, so peers that never answer do not keep it from the
// one that has the actor.
func TestWhereisIsNotHeldUpBySilentPeers(t *testing.T) {
	a, b := newNode(t), newNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 3 { // hosts that take the control protocol and never answer
		h := testhost.NewHost(t)
		for _, p := range []protocol.ID{routing.ProtoCtl, routing.ProtoCtl10} {
			h.SetStreamHandler(p, func(s network.Stream) { _, _ = io.Copy(io.Discard, s) })
		}
		if err := a.Connect(ctx, libp2ppeer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	want := spawn(t, b, "wanted", echo)
	start := time.Now()
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if got, err := a.Whereis(short, "wanted"); err != nil || got != want || time.Since(start) > 4*time.Second {
		t.Fatalf("whereis with three silent peers: %v %v after %v", got, err, time.Since(start))
	}
	// Nobody has it: the silent peers are waited for, up to the deadline.
	brief, stop2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop2()
	if _, err := a.Whereis(brief, "nobody"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("whereis nobody with silent peers: %v, want the deadline", err)
	}
}
