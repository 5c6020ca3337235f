package actor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// replier answers every request with what reply returns for it.
func replier(t *testing.T, s *System, reply func(any) any) Ref {
	return mustSpawn(t, s, "", func(c *Context) {
		c.Receive(Loop(Any(func(m any) { c.Reply(reply(m)) })))
	})
}

func TestAskAs(t *testing.T) {
	s := newSys(t)
	ref := replier(t, s, func(m any) any {
		if m == "nil" {
			return nil
		}
		return 42
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := AskAs[int](ctx, s, ref, "n"); err != nil || v != 42 {
		t.Fatalf("AskAs[int] = %v, %v; want 42", v, err)
	}
	_, err := AskAs[string](ctx, s, ref, "n")
	if !errors.Is(err, ErrReplyType) || !strings.Contains(err.Error(), "got int, want string") {
		t.Fatalf("AskAs[string] of an int: %v; want ErrReplyType naming both types", err)
	}
	if v, err := AskAs[error](ctx, s, ref, "nil"); err != nil || v != nil {
		t.Fatalf("AskAs[error] of a nil reply = %v, %v; want nil, nil", v, err)
	}
	if _, err := AskAs[int](ctx, s, mustRef(t, s.Peer()+"/nobody"), "n"); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("AskAs of nobody: %v; want ErrNoSuchActor", err)
	}
}

func TestAskThen(t *testing.T) {
	s := newSys(t)
	ref := replier(t, s, func(any) any { return 42 })
	type result struct {
		n   int
		s   string
		err error
	}
	got := make(chan result, 2)
	mustSpawn(t, s, "", func(c *Context) {
		AskThen(c, ref, "n", 5*time.Second, func(n int, err error) {
			got <- result{n: n, err: err}
			AskThen(c, ref, "n", 5*time.Second, func(v string, err error) {
				got <- result{s: v, err: err}
			})
		})
	})
	if r := recv(t, got); r.err != nil || r.n != 42 {
		t.Fatalf("AskThen[int] = %+v; want 42", r)
	}
	if r := recv(t, got); !errors.Is(r.err, ErrReplyType) || r.s != "" {
		t.Fatalf("AskThen[string] of an int = %+v; want ErrReplyType", r)
	}
}

type tick struct{}

// TestLoop: a Loop stays installed after each message, the other cases of
// it handled in turn; a handler may install another continuation, after
// which the Loop is gone; and it costs no allocation per message.
func TestLoop(t *testing.T) {
	s := newSys(t)
	got := make(chan any, 16)
	ref := mustSpawn(t, s, "", func(c *Context) {
		n := 0
		c.Receive(Loop(
			On(func(tick) { n++; got <- n }),
			On(func(s string) {
				got <- s
				c.Receive(On(func(tick) { got <- "after" }))
			}),
		))
	})
	for want := 1; want <= 3; want++ {
		s.Send(ref, tick{})
		if v := recv(t, got); v != want {
			t.Fatalf("got %v, want %d", v, want)
		}
	}
	s.Send(ref, "switch")
	s.Send(ref, tick{})
	for _, want := range []any{"switch", "after"} {
		if v := recv(t, got); v != want {
			t.Fatalf("got %v, want %v", v, want)
		}
	}

	done := make(chan struct{})
	counter := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(Loop(On(func(tick) { done <- struct{}{} })))
	})
	allocs := testing.AllocsPerRun(1000, func() {
		s.Send(counter, tick{})
		<-done
	})
	if allocs >= 0.5 {
		t.Fatalf("%.2f allocations per message, want none", allocs)
	}
}
