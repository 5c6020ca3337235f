package actor

import (
	"context"
	"errors"
	"testing"
	"time"
)

type crash struct{ reason error }

// crashable is a child that counts its starts and exits with the reason it
// is sent.
func crashable(starts chan<- string, name string) Behavior {
	return func(c *Context) {
		starts <- name
		forever(c, func() []Case {
			return []Case{On(func(m crash) { c.Exit(m.reason) })}
		})
	}
}

func children(t *testing.T, s *System, sup Ref) []Ref {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.Ask(ctx, sup, WhichChildren{})
	if err != nil {
		t.Fatal(err)
	}
	return v.([]Ref)
}

func supSpec(strategy Strategy, starts chan string) SupervisorSpec {
	return SupervisorSpec{
		Strategy: strategy, MaxRestarts: 3, Period: time.Hour,
		Children: []ChildSpec{
			{Name: "a", Start: crashable(starts, "a")},
			{Name: "b", Start: crashable(starts, "b")},
			{Name: "c", Start: crashable(starts, "c"), Restart: Temporary},
		},
	}
}

// expectStarts checks which children started (in any order: their
// behaviors run concurrently on their loops).
func expectStarts(t *testing.T, starts <-chan string, want ...string) {
	t.Helper()
	left := map[string]int{}
	for _, w := range want {
		left[w]++
	}
	for range want {
		got := recv(t, starts)
		if left[got] == 0 {
			t.Fatalf("started %q, want %v", got, want)
		}
		left[got]--
	}
	select {
	case extra := <-starts:
		t.Fatalf("unexpected start of %q", extra)
	default:
	}
}

func TestOneForOneRestartsOnlyTheFailedChild(t *testing.T) {
	s := newSys(t)
	starts := make(chan string, 16)
	sup := mustSpawn(t, s, "sup", Supervisor(supSpec(OneForOne, starts)))
	expectStarts(t, starts, "a", "b", "c")
	before := children(t, s, sup)
	downB := watcher(t, s, before[1])
	s.Send(before[1], crash{errBoom})
	recv(t, downB)
	expectStarts(t, starts, "b")
	after := children(t, s, sup)
	if after[0] != before[0] || after[1].IsZero() || after[2] != before[2] {
		t.Fatalf("children %v after restarting b, before %v", after, before)
	}
	// A temporary child is not restarted.
	downC := watcher(t, s, before[2])
	s.Send(before[2], crash{errBoom})
	recv(t, downC)
	if got := children(t, s, sup); !got[2].IsZero() {
		t.Fatalf("temporary child restarted: %v", got)
	}
	expectStarts(t, starts)
}

func TestOneForAllRestartsEveryChild(t *testing.T) {
	s := newSys(t)
	starts := make(chan string, 16)
	spec := supSpec(OneForAll, starts)
	spec.Children = spec.Children[:2]
	sup := mustSpawn(t, s, "sup", Supervisor(spec))
	expectStarts(t, starts, "a", "b")
	before := children(t, s, sup)
	downA := watcher(t, s, before[0])
	s.Send(before[1], crash{errBoom})
	if d := recv(t, downA); !errors.Is(d.Reason, ErrShutdown) {
		t.Fatalf("sibling stopped with %v, want ErrShutdown", d.Reason)
	}
	expectStarts(t, starts, "a", "b")
	if got := children(t, s, sup); got[0].IsZero() || got[1].IsZero() {
		t.Fatalf("children after one-for-all restart: %v", got)
	}
}

func TestTransientChildNotRestartedAfterNormalExit(t *testing.T) {
	s := newSys(t)
	starts := make(chan string, 16)
	sup := mustSpawn(t, s, "sup", Supervisor(SupervisorSpec{
		MaxRestarts: 1, Period: time.Hour,
		Children: []ChildSpec{{Name: "tr", Start: crashable(starts, "tr"), Restart: Transient}},
	}))
	expectStarts(t, starts, "tr")
	ch := children(t, s, sup)[0]
	down := watcher(t, s, ch)
	s.Send(ch, crash{nil})
	recv(t, down)
	if got := children(t, s, sup); !got[0].IsZero() {
		t.Fatalf("transient child restarted after a normal exit: %v", got)
	}
}

func TestRestartIntensityStopsSupervisor(t *testing.T) {
	s := newSys(t)
	starts := make(chan string, 16)
	spec := supSpec(OneForOne, starts)
	spec.MaxRestarts = 2
	sup := mustSpawn(t, s, "sup", Supervisor(spec))
	supDown := watcher(t, s, sup)
	expectStarts(t, starts, "a", "b", "c")
	for i := range 3 {
		a := children(t, s, sup)[0]
		s.Send(a, crash{errBoom})
		if i < 2 {
			expectStarts(t, starts, "a")
		}
	}
	d := recv(t, supDown)
	if !errors.Is(d.Reason, ErrRestartIntensity) || !errors.Is(d.Reason, errBoom) {
		t.Fatalf("supervisor stopped with %v, want ErrRestartIntensity wrapping the child's reason", d.Reason)
	}
	// Its children were stopped with it.
	for _, name := range []string{"a", "b", "c"} {
		if _, ok := s.Whereis(name); ok {
			t.Fatalf("child %s outlived its supervisor", name)
		}
	}
}

func TestSupervisorRejectsBadSpec(t *testing.T) {
	s := newSys(t)
	for _, spec := range []SupervisorSpec{
		{MaxRestarts: -1, Period: time.Second},
		{MaxRestarts: 1, Period: 0},
		{MaxRestarts: 1, Period: time.Second, Strategy: 7},
		{MaxRestarts: 1, Period: time.Second, Children: []ChildSpec{{Name: "x"}}},
	} {
		sup := mustSpawn(t, s, "", Supervisor(spec))
		if d := recv(t, watcher(t, s, sup)); d.Reason == nil {
			t.Fatalf("spec %+v accepted", spec)
		}
	}
}
