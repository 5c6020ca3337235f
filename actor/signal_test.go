package actor

import (
	"errors"
	"strings"
	"testing"
)

var errBoom = errors.New("boom")

// failOn returns a behavior that exits with reason on receiving a struct{}.
func failOn(reason error) Behavior {
	return func(c *Context) { c.Receive(On(func(struct{}) { c.Exit(reason) })) }
}

func TestPanicStopsOnlyThatActorAndLoopLives(t *testing.T) {
	s := newSys(t, WithLoops(1))
	bad := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(On(func(struct{}) { panic("kaput") }))
	})
	downs := watcher(t, s, bad)
	replies := make(chan int, 1)
	good := mustSpawn(t, s, "", func(c *Context) {
		forever(c, func() []Case { return []Case{On(func(n int) { replies <- n })} })
	})
	s.Send(bad, struct{}{})
	d := recv(t, downs)
	var pe *PanicError
	if !errors.As(d.Reason, &pe) || pe.Value != "kaput" {
		t.Fatalf("down reason %v, want a PanicError with the panic value", d.Reason)
	}
	if !strings.Contains(string(pe.Stack), "TestPanicStopsOnlyThatActorAndLoopLives") {
		t.Fatalf("panic stack does not show the panicking function:\n%s", pe.Stack)
	}
	s.Send(good, 5) // same loop, still served
	if n := recv(t, replies); n != 5 {
		t.Fatal(n)
	}
	before := s.DeadLetters()
	s.Send(bad, struct{}{})
	if s.DeadLetters() != before+1 {
		t.Fatal("a message to the dead actor was not a dead letter")
	}
}

func TestLinksPropagateAbnormalExit(t *testing.T) {
	s := newSys(t)
	childRef := make(chan Ref, 1)
	parent := mustSpawn(t, s, "", func(c *Context) {
		child, err := c.SpawnLink("", failOn(errBoom))
		if err != nil {
			t.Error(err)
		}
		childRef <- child
		c.Receive(Any(func(any) {}))
	})
	parentDown := watcher(t, s, parent)
	child := recv(t, childRef)
	s.Send(child, struct{}{})
	if d := recv(t, parentDown); !errors.Is(d.Reason, errBoom) {
		t.Fatalf("parent stopped with %v, want the child's reason", d.Reason)
	}
}

func TestLinksDoNotPropagateNormalExit(t *testing.T) {
	s := newSys(t)
	childRef := make(chan Ref, 1)
	alive := make(chan string, 1)
	parent := mustSpawn(t, s, "", func(c *Context) {
		child, _ := c.SpawnLink("", failOn(nil))
		childRef <- child
		c.Receive(On(func(m string) { alive <- m }))
	})
	child := recv(t, childRef)
	childDown := watcher(t, s, child)
	s.Send(child, struct{}{})
	recv(t, childDown)
	s.Send(parent, "still here")
	if m := recv(t, alive); m != "still here" {
		t.Fatal(m)
	}
}

func TestTrapExitTurnsExitSignalsIntoMessages(t *testing.T) {
	s := newSys(t)
	exits := make(chan Exit, 1)
	childRef := make(chan Ref, 1)
	mustSpawn(t, s, "", func(c *Context) {
		c.TrapExit(true)
		child, _ := c.SpawnLink("", failOn(errBoom))
		childRef <- child
		c.Receive(On(func(e Exit) { exits <- e }))
	})
	child := recv(t, childRef)
	s.Send(child, struct{}{})
	e := recv(t, exits)
	if e.From != child || !errors.Is(e.Reason, errBoom) {
		t.Fatalf("exit %+v, want from %v with errBoom", e, child)
	}
}

func TestUnlinkStopsPropagation(t *testing.T) {
	s := newSys(t)
	childRef := make(chan Ref, 1)
	alive := make(chan string, 1)
	parent := mustSpawn(t, s, "", func(c *Context) {
		child, _ := c.SpawnLink("", failOn(errBoom))
		c.Unlink(child)
		childRef <- child
		c.Receive(On(func(m string) { alive <- m }))
	})
	child := recv(t, childRef)
	childDown := watcher(t, s, child)
	s.Send(child, struct{}{})
	recv(t, childDown)
	s.Send(parent, "ok")
	if recv(t, alive) != "ok" {
		t.Fatal("parent died")
	}
}

func TestKillCannotBeTrapped(t *testing.T) {
	s := newSys(t)
	ref := mustSpawn(t, s, "", func(c *Context) {
		c.TrapExit(true)
		c.Receive(Any(func(any) {}))
	})
	downs := watcher(t, s, ref)
	s.send(ref, Ref{}, exitSignal{Kill: true}, 0, kindSignal)
	if d := recv(t, downs); !errors.Is(d.Reason, ErrKilled) {
		t.Fatalf("reason %v, want ErrKilled", d.Reason)
	}
}

func TestLinkToUnknownActorExitsWithNoSuchActor(t *testing.T) {
	s := newSys(t)
	exits := make(chan Exit, 1)
	ghost, _ := NewRef(s.Peer(), "ghost")
	mustSpawn(t, s, "", func(c *Context) {
		c.TrapExit(true)
		c.Link(ghost)
		c.Receive(On(func(e Exit) { exits <- e }))
	})
	if e := recv(t, exits); e.From != ghost || !errors.Is(e.Reason, ErrNoSuchActor) {
		t.Fatalf("exit %+v", e)
	}
}

func TestMonitorUnknownActorGivesDownAtOnce(t *testing.T) {
	s := newSys(t)
	ghost, _ := NewRef(s.Peer(), "ghost")
	d := recv(t, watcher(t, s, ghost))
	if d.Ref != ghost || !errors.Is(d.Reason, ErrNoSuchActor) || d.ID == 0 {
		t.Fatalf("down %+v", d)
	}
}

func TestDemonitorDropsDown(t *testing.T) {
	s := newSys(t)
	target := mustSpawn(t, s, "", failOn(errBoom))
	got := make(chan any, 2)
	w := mustSpawn(t, s, "", func(c *Context) {
		id := c.Monitor(target)
		c.Receive(On(func(string) {
			c.Demonitor(id)
			c.Send(target, struct{}{}) // target dies after the demonitor arrives
			second := c.Monitor(target)
			c.Receive(On(func(d Down) { got <- d; got <- second }))
		}))
	})
	s.Send(w, "go")
	d := recv(t, got).(Down)
	second := recv(t, got).(MonitorID)
	// The target died after the demonitor; the second monitor, set on a
	// dead or dying actor, is the only Down.
	if d.ID != second {
		t.Fatalf("got Down for monitor %d, want only the second monitor %d", d.ID, second)
	}
}

func TestMonitorSeesExitReason(t *testing.T) {
	s := newSys(t)
	target := mustSpawn(t, s, "t", failOn(errBoom))
	downs := watcher(t, s, target)
	s.Send(target, struct{}{})
	d := recv(t, downs)
	if d.Ref != target || !errors.Is(d.Reason, errBoom) {
		t.Fatalf("down %+v", d)
	}
	// The name is free again.
	if _, err := s.Spawn("t", failOn(nil)); err != nil {
		t.Fatalf("respawn under the freed name: %v", err)
	}
}
