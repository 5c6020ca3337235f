package actor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// Asks: from plain code and from actors, timeouts, late replies, and
// what ends them.

func TestAskFromPlainCode(t *testing.T) {
	s := newSys(t)
	echo := mustSpawn(t, s, "echo", echoBehavior)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.Ask(ctx, echo, 42)
	if err != nil || v != 42 {
		t.Fatalf("ask: %v, %v", v, err)
	}
}

func TestAskTimeoutIsDeadlineExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(WithLogger(testutil.QuietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		silent := mustSpawn(t, s, "silent", func(c *Context) {
			forever(c, func() []Case { return []Case{Any(func(any) {})} })
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := s.Ask(ctx, silent, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("System.Ask: %v, want DeadlineExceeded", err)
		}
		errs := make(chan error, 1)
		mustSpawn(t, s, "", func(c *Context) {
			c.Ask(silent, 1, time.Second, func(_ any, err error) { errs <- err })
		})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Context.Ask: %v, want DeadlineExceeded", err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAskInsideActorKeepsOtherMessages(t *testing.T) {
	s := newSys(t)
	echo := mustSpawn(t, s, "", echoBehavior)
	out := make(chan any, 3)
	a := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(On(func(string) {
			c.Send(c.Self(), 7) // arrives while waiting for the reply
			c.Ask(echo, "q", 5*time.Second, func(r any, err error) {
				out <- r
				c.Receive(On(func(n int) { out <- n }))
			})
		}))
	})
	s.Send(a, "start")
	if r := recv(t, out); r != "q" {
		t.Fatalf("reply %v", r)
	}
	if r := recv(t, out); r != 7 {
		t.Fatalf("kept message %v", r)
	}
}

func TestAskUnknownActorFailsFast(t *testing.T) {
	s := newSys(t)
	ghost, _ := NewRef(s.Peer(), "ghost")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Ask(ctx, ghost, 1); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("ask ghost: %v, want ErrNoSuchActor", err)
	}
	errs := make(chan error, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.Ask(ghost, 1, time.Hour, func(_ any, err error) { errs <- err })
	})
	if err := recv(t, errs); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("Context.Ask ghost: %v", err)
	}
}

func TestSystemAskOnLoopIsAnError(t *testing.T) {
	s := newSys(t)
	errs := make(chan error, 1)
	echo := mustSpawn(t, s, "", echoBehavior)
	mustSpawn(t, s, "", func(c *Context) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := s.Ask(ctx, echo, 1)
		errs <- err
	})
	if err := recv(t, errs); !errors.Is(err, ErrBlockingCall) {
		t.Fatalf("ask on loop: %v, want ErrBlockingCall", err)
	}
}

func TestLateReplyIsDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var letters []DeadLetter
		s, err := New(WithLogger(testutil.QuietLogger()), WithDeadLetterHook(func(d DeadLetter) {
			mu.Lock()
			letters = append(letters, d)
			mu.Unlock()
		}))
		if err != nil {
			t.Fatal(err)
		}
		slow := mustSpawn(t, s, "slow", func(c *Context) {
			c.Receive(Any(func(any) {
				req := c.Request()
				c.ReceiveWithin(2*time.Second, Timeout(func() { c.Respond(req, "late") }))
			}))
		})
		errs := make(chan error, 1)
		asker := mustSpawn(t, s, "asker", func(c *Context) {
			c.Ask(slow, 1, time.Second, func(_ any, err error) {
				errs <- err
				c.Receive(On(func(string) { t.Error("a late reply reached a case") }))
			})
		})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(letters) != 1 || letters[0].Msg != "late" || letters[0].To != asker || !errors.Is(letters[0].Reason, ErrLateReply) {
			t.Fatalf("dead letters %+v", letters)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAskWaiterTakesOnlyItsReply(t *testing.T) {
	letters := make(chan DeadLetter, 10)
	s := newSys(t, WithDeadLetterHook(func(d DeadLetter) { letters <- d }))
	// The target writes to the asker before replying, and replies twice.
	chatty := mustSpawn(t, s, "chatty", func(c *Context) {
		forever(c, func() []Case {
			return []Case{Any(func(m any) {
				c.Send(c.Sender(), "not a reply")
				c.Reply(m)
				c.Reply("second")
			})}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	before := s.Actors()
	if v, err := s.Ask(ctx, chatty, 1); err != nil || v != 1 {
		t.Fatalf("ask: %v, %v", v, err)
	}
	if s.Actors() != before {
		t.Fatalf("Actors() = %d after an ask, want %d", s.Actors(), before)
	}
	// The message and the second reply become dead letters.
	got := map[any]bool{}
	for range 2 {
		got[recv(t, letters).Msg] = true
	}
	if !got["not a reply"] || !got["second"] {
		t.Fatalf("dead letters %v, want the message and the second reply", got)
	}
}

func TestAskEndsAtShutdown(t *testing.T) {
	s, err := New(WithLogger(testutil.QuietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	silent := mustSpawn(t, s, "silent", func(c *Context) {
		forever(c, func() []Case { return []Case{Any(func(any) { asked <- struct{}{} })} })
	})
	errs := make(chan error, 1)
	go func() {
		_, err := s.Ask(context.Background(), silent, 1)
		errs <- err
	}()
	recv(t, asked) // the Ask is waiting for its reply
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, errs); !errors.Is(err, ErrShutdown) {
		t.Fatalf("ask during shutdown: %v, want ErrShutdown", err)
	}
	if _, err := s.Ask(context.Background(), silent, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("ask after shutdown: %v, want ErrClosed", err)
	}
}

// An Ask after a Receive or Ask in the same step is refused before its
// request leaves: the actor stops with ErrBadReceive, and no Ask of it
// stays indexed.
func TestSecondAskInOneStepIsRefused(t *testing.T) {
	rr := &sentRemote{sent: make(chan envelope, 16)}
	s := newSys(t, WithPeer("me"), withRemote(rr))
	far, _ := ParseRef("them/x")
	asker := mustSpawn(t, s, "asker", func(c *Context) {
		c.Receive(On(func(string) {
			c.Ask(far, "first", time.Hour, func(any, error) {})
			c.Ask(far, "second", time.Hour, func(any, error) {})
		}))
	})
	downs := make(chan Down, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.Monitor(asker) // before the asker asks: its Down follows its clean-up
		s.Send(asker, "go")
		c.Receive(On(func(d Down) { downs <- d }))
	})
	if d := recv(t, downs); !errors.Is(d.Reason, ErrBadReceive) {
		t.Fatalf("the asker stopped with %v, want ErrBadReceive", d.Reason)
	}
	if e := recv(t, rr.sent); e.Msg != "first" {
		t.Fatalf("sent %v", e.Msg)
	}
	select {
	case e := <-rr.sent:
		t.Fatalf("the refused Ask sent %v", e.Msg)
	default:
	}
	if n := edges(s, edgeAsk); n != 0 {
		t.Fatalf("%d asks indexed after the asker stopped", n)
	}
}
