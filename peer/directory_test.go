package peer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

func TestDirectoryAwait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	plain := newTestNode(t)
	if _, err := plain.Directory().Await(ctx, "db"); !errors.Is(err, ErrNoDirectory) {
		t.Fatalf("Await without WithGroups: %v, want ErrNoDirectory", err)
	}

	a, b := newTestNode(t, WithGroups(true)), newTestNode(t, WithGroups(true))
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if refs, err := a.Directory().Await(short, "db"); !errors.Is(err, context.DeadlineExceeded) || refs != nil {
		t.Fatalf("Await of an actor nobody advertises: %v, %v; want the deadline", refs, err)
	}

	// A waiter started before the advertisement exists wakes when it comes.
	type result struct {
		refs []actor.Ref
		err  error
	}
	done := make(chan result, 1)
	go func() {
		refs, err := a.Directory().Await(ctx, "db")
		done <- result{refs, err}
	}()
	b.System().Spawn("db", func(c *actor.Context) { c.Receive(actor.Loop(actor.On(func(string) {}))) })
	if err := a.Connect(ctx, *b.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.refs) != 1 || r.refs[0].Peer() != b.ID().String() || r.refs[0].Name() != "db" {
		t.Fatalf("Await: %v, %v; want b's db", r.refs, r.err)
	}
}
