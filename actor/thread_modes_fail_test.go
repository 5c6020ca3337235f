package actor

import (
	"errors"
	"testing"
	"time"
)

// Failures, links, monitors, names and supervision, in both modes (see
// thread_modes_test.go).

func TestModesPanicIsTheExitReason(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		ref := m.must(t, s, "", func(a api) {
			a.Receive(On(func(string) { panic("boom") }))
		})
		downs := watcher(t, s, ref)
		s.Send(ref, "go")
		d := recv(t, downs)
		var pe *PanicError
		if !errors.As(d.Reason, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
			t.Fatalf("reason %v, want a *PanicError of boom with a stack", d.Reason)
		}
		if _, ok := s.Whereis(ref.Name()); ok {
			t.Fatal("the name outlived the actor")
		}
	})
}

func TestModesLinkPropagatesAbnormalExit(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		errBoom := errors.New("boom")
		failing := m.must(t, s, "", func(a api) {
			a.Receive(On(func(string) { a.Exit(errBoom) }))
		})
		linked := make(chan struct{})
		partner := m.must(t, s, "", func(a api) {
			a.Link(failing)
			close(linked)
			a.Receive(On(func(int) {})) // never comes: the exit stops it while it waits
		})
		recv(t, linked)
		downs := watcher(t, s, partner)
		s.Send(failing, "fail")
		if d := recv(t, downs); !errors.Is(d.Reason, errBoom) {
			t.Fatalf("partner's reason %v, want boom", d.Reason)
		}
	})
}

func TestModesTrapExitTurnsExitsIntoMessages(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		errBoom := errors.New("boom")
		got := make(chan Exit, 1)
		ready := make(chan Ref, 1)
		m.must(t, s, "", func(a api) {
			a.TrapExit(true)
			child, err := m.spawn(a.(interface{ System() *System }).System(), "", func(a api) {
				a.Receive(On(func(string) { a.Exit(errBoom) }))
			})
			if err != nil {
				t.Error(err)
				return
			}
			a.Link(child)
			ready <- child
			a.Receive(On(func(e Exit) { got <- e }))
		})
		child := recv(t, ready)
		s.Send(child, "fail")
		if e := recv(t, got); e.From != child || !errors.Is(e.Reason, errBoom) {
			t.Fatalf("exit %+v, want boom from %v", e, child)
		}
	})
}

func TestModesMonitorGetsDown(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		target := mustSpawn(t, s, "", func(c *Context) { c.Receive(On(func(string) {})) })
		got := make(chan Down, 1)
		var id MonitorID
		monitored := make(chan struct{})
		m.must(t, s, "", func(a api) {
			id = a.Monitor(target)
			close(monitored)
			a.Receive(On(func(d Down) { got <- d }))
		})
		recv(t, monitored)
		s.Send(target, "stop") // the handler installs nothing: a normal exit
		d := recv(t, got)
		if d.Ref != target || d.ID != id || d.Reason != nil {
			t.Fatalf("down %+v, want a normal exit of %v under %d", d, target, id)
		}
	})
}

func TestModesNamesAndWhereis(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		ref := m.must(t, s, "named", func(a api) {
			a.Receive(On(func(string) {}))
		})
		if got, ok := s.Whereis("named"); !ok || got != ref {
			t.Fatalf("Whereis = %v, %v; want %v", got, ok, ref)
		}
		if _, err := m.spawn(s, "named", func(a api) {}); !errors.Is(err, ErrNameTaken) {
			t.Fatalf("second spawn of the name: %v, want ErrNameTaken", err)
		}
		downs := watcher(t, s, ref)
		s.Send(ref, "stop")
		recv(t, downs)
		if _, ok := s.Whereis("named"); ok {
			t.Fatal("the name is still registered after the actor stopped")
		}
		again := m.must(t, s, "named", func(a api) { a.Receive(On(func(string) {})) })
		if again != ref {
			t.Fatalf("the name gives %v, want %v", again, ref)
		}
	})
}

func TestModesSupervisorRestartsChild(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		starts := make(chan Ref, 4)
		spec := SupervisorSpec{
			Strategy: OneForOne, MaxRestarts: 3, Period: time.Minute,
			Children: []ChildSpec{m.child("worker", func(a api) {
				starts <- a.Self()
				a.Receive(On(func(string) { panic("crash") }))
			})},
		}
		mustSpawn(t, s, "sup", Supervisor(spec))
		first := recv(t, starts)
		s.Send(first, "crash")
		second := recv(t, starts)
		if second != first {
			t.Fatalf("restarted as %v, want the name %v again", second, first)
		}
		if ref, ok := s.Whereis("worker"); !ok || ref != first {
			t.Fatalf("Whereis(worker) = %v, %v after the restart", ref, ok)
		}
	})
}

func TestModesKillStopsAWaitingActor(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		ran := make(chan struct{}, 1)
		ref := m.must(t, s, "", func(a api) {
			a.Receive(On(func(string) { ran <- struct{}{} }))
		})
		downs := watcher(t, s, ref)
		s.send(ref, Ref{}, exitSignal{Kill: true}, 0, kindSignal)
		if d := recv(t, downs); !errors.Is(d.Reason, ErrKilled) {
			t.Fatalf("reason %v, want ErrKilled", d.Reason)
		}
		if len(ran) != 0 {
			t.Fatal("a handler ran after the kill")
		}
	})
}

func TestModesBadReceiveStops(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		ref := m.must(t, s, "", func(a api) {
			a.Receive(On(func(string) { a.ReceiveWithin(time.Second, On(func(int) {})) }))
		})
		downs := watcher(t, s, ref)
		s.Send(ref, "go")
		if d := recv(t, downs); !errors.Is(d.Reason, ErrBadReceive) {
			t.Fatalf("reason %v, want ErrBadReceive", d.Reason)
		}
	})
}

func TestModesShutdownStopsWaitingActors(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		refs := make([]Ref, 10)
		for i := range refs {
			refs[i] = m.must(t, s, "", func(a api) { a.Receive(On(func(string) {})) })
		}
		if err := s.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := s.Actors(); n != 0 {
			t.Fatalf("%d actors after Shutdown", n)
		}
		for _, ref := range refs {
			if _, ok := s.Whereis(ref.Name()); ok {
				t.Fatalf("%v still registered after Shutdown", ref)
			}
		}
	})
}

// A monitor asked for while the actor lived, but still in its mailbox
// when it stopped (before its first receive: a thread doing IO may never
// receive), gets the actor's real exit reason, not ErrNoSuchActor.
func TestModesMonitorPendingAtExitGetsTheReason(t *testing.T) {
	forModes(t, func(t *testing.T, m mode) {
		s := newSys(t)
		errBoom := errors.New("boom")
		gate := make(chan struct{})
		ref := m.must(t, s, "", func(a api) {
			<-gate // the monitor signal is in the mailbox by now
			a.Exit(errBoom)
		})
		downs := watcher(t, s, ref)
		close(gate)
		if d := recv(t, downs); !errors.Is(d.Reason, errBoom) {
			t.Fatalf("reason %v, want boom", d.Reason)
		}
	})
}
