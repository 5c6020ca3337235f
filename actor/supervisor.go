package actor

import (
	"errors"
	"fmt"
	"time"
)

// Strategy says which children a supervisor restarts when one fails.
type Strategy int

const (
	// OneForOne restarts only the child that stopped.
	OneForOne Strategy = iota
	// OneForAll stops the other children and restarts all of them, in order.
	OneForAll
)

// Restart says when a stopped child is restarted.
type Restart int

const (
	// Permanent children are always restarted.
	Permanent Restart = iota
	// Transient children are restarted only after an abnormal exit.
	Transient
	// Temporary children are never restarted.
	Temporary
)

// ChildSpec describes one supervised child.
type ChildSpec struct {
	Name    string         // registered name; "" for a generated one (a new Ref per restart)
	Start   Behavior       // the child's behavior, run anew at each restart
	Thread  ThreadBehavior // instead of Start: a thread-style child (SpawnThread)
	Restart Restart        // when the child is restarted (default Permanent)
}

// SupervisorSpec configures Supervisor. At most MaxRestarts restarts may
// happen within Period; one more and the supervisor stops its children and
// exits with ErrRestartIntensity (Erlang's restart intensity).
type SupervisorSpec struct {
	Strategy    Strategy      // which children a failure restarts (default OneForOne)
	MaxRestarts int           // restarts allowed within Period; 0 allows none, negative is invalid
	Period      time.Duration // the window restarts are counted over; must be positive
	Children    []ChildSpec   // started in this order, stopped in reverse order
}

// WhichChildren asks a supervisor for its children; it replies with a
// []Ref in spec order (zero Refs for children that are not running).
type WhichChildren struct{}

// Supervisor returns a behavior that starts the children of spec, linked,
// and restarts them by its strategy. It traps exits. An exit signal from an
// actor that is not one of its children (its parent, say) stops it, after
// it stopped its children. A bad spec stops it at once with an error.
// A thread-style child (ChildSpec.Thread) blocked in a call of its own
// stops only once it next receives (see Thread.Receive): a one-for-all
// restart, or the supervisor's own stop, waits for it until then.
func Supervisor(spec SupervisorSpec) Behavior {
	return func(c *Context) {
		if err := spec.validate(); err != nil {
			c.Exit(err)
			return
		}
		s := &supervisor{c: c, spec: spec, refs: make([]Ref, len(spec.Children))}
		c.TrapExit(true)
		for i := range spec.Children {
			if err := s.start(i); err != nil {
				s.shutdown(err)
				return
			}
		}
		s.loop()
	}
}

func (spec *SupervisorSpec) validate() error {
	switch {
	case spec.MaxRestarts < 0:
		return fmt.Errorf("actor: supervisor MaxRestarts %d is negative", spec.MaxRestarts)
	case spec.Period <= 0:
		return fmt.Errorf("actor: supervisor Period %v must be positive", spec.Period)
	case spec.Strategy != OneForOne && spec.Strategy != OneForAll:
		return fmt.Errorf("actor: unknown supervisor strategy %d", spec.Strategy)
	}
	for i, ch := range spec.Children {
		if ch.Start == nil && ch.Thread == nil {
			return fmt.Errorf("actor: supervisor child %d: %w", i, ErrNilBehavior)
		}
		if ch.Start != nil && ch.Thread != nil {
			return fmt.Errorf("actor: supervisor child %d has both Start and Thread", i)
		}
	}
	return nil
}

type supervisor struct {
	c        *Context
	spec     SupervisorSpec
	refs     []Ref       // running children by spec index
	restarts []time.Time // restart times within the period
}

func (s *supervisor) start(i int) error {
	ch := &s.spec.Children[i]
	var ref Ref
	var err error
	if ch.Thread != nil {
		ref, err = s.c.SpawnLinkThread(ch.Name, ch.Thread)
	} else {
		ref, err = s.c.SpawnLink(ch.Name, ch.Start)
	}
	if err != nil {
		return fmt.Errorf("actor: supervisor starting child %d: %w", i, err)
	}
	s.refs[i] = ref
	return nil
}

func (s *supervisor) child(ref Ref) int {
	for i, r := range s.refs {
		if r == ref && !r.IsZero() {
			return i
		}
	}
	return -1
}

// loop waits for exits and requests.
func (s *supervisor) loop() {
	s.c.Receive(
		On(func(e Exit) { s.exited(e) }),
		On(func(WhichChildren) {
			s.c.Reply(append([]Ref(nil), s.refs...))
			s.loop()
		}),
	)
}

func (s *supervisor) exited(e Exit) {
	i := s.child(e.From)
	if i < 0 {
		if e.Reason == nil {
			s.loop()
			return
		}
		s.shutdown(e.Reason) // the parent or a peer failed
		return
	}
	s.refs[i] = Ref{}
	spec := s.spec.Children[i]
	if spec.Restart == Temporary || (spec.Restart == Transient && e.Reason == nil) {
		s.loop()
		return
	}
	if !s.allowRestart() {
		s.c.sys.cfg.logger.Error("actor: supervisor gave up", "supervisor", s.c.String(),
			"child", e.From.String(), "reason", e.Reason)
		s.shutdown(fmt.Errorf("%w: child %v: %w", ErrRestartIntensity, e.From, errOrNormal(e.Reason)))
		return
	}
	if s.spec.Strategy == OneForOne {
		if err := s.start(i); err != nil {
			s.shutdown(err)
			return
		}
		s.loop()
		return
	}
	s.stopChildren(func() {
		for j := range s.spec.Children {
			if err := s.start(j); err != nil {
				s.shutdown(err)
				return
			}
		}
		s.loop()
	})
}

func errOrNormal(err error) error {
	if err == nil {
		return errors.New("normal exit")
	}
	return err
}

// allowRestart records a restart and reports whether the intensity allows it.
func (s *supervisor) allowRestart() bool {
	now := time.Now()
	keep := s.restarts[:0]
	for _, t := range s.restarts {
		if now.Sub(t) < s.spec.Period {
			keep = append(keep, t)
		}
	}
	s.restarts = append(keep, now)
	return len(s.restarts) <= s.spec.MaxRestarts
}

// stopChildren kills every running child, in reverse start order, waits for
// each one's exit, then runs then.
func (s *supervisor) stopChildren(then func()) {
	pending := 0
	for i := len(s.refs) - 1; i >= 0; i-- {
		if r := s.refs[i]; !r.IsZero() {
			s.c.flushRun()
			s.c.sys.send(r, s.c.Self(), exitSignal{Reason: ErrShutdown, Kill: true}, 0, kindSignal)
			pending++
		}
	}
	var wait func()
	wait = func() {
		if pending == 0 {
			then()
			return
		}
		// Other messages (requests, exits of non-children) wait their turn.
		s.c.Receive(OnWhen(func(e Exit) bool { return s.child(e.From) >= 0 }, func(e Exit) {
			s.refs[s.child(e.From)] = Ref{}
			pending--
			wait()
		}))
	}
	wait()
}

// shutdown stops the children and then the supervisor with reason.
func (s *supervisor) shutdown(reason error) {
	s.stopChildren(func() { s.c.Exit(reason) })
}
