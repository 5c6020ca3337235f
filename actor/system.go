package actor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-mesh/troupe/actor/eventloop"
)

// System hosts actors on a group of event loops. All its methods are safe
// for concurrent use.
type System struct {
	cfg   config
	peer  string
	group *eventloop.Group
	port  port // its transport handle: port.s is the system

	names  *registry
	batch  batchRemote  // cfg.remote when it takes runs of messages, else nil
	direct directRemote // cfg.remote when it can write on the caller's goroutine, else nil
	remote remoteIndex  // monitors and links across peers
	groups groupTable
	// residents counts the actors whose activations run on each loop.
	residents []residents
	nodes     sync.Pool // *node, recycled once handled
	blocks    sync.Pool // *nodeBlock, for Inbounds

	ids         atomic.Uint64 // monitor IDs (not correlation IDs: newCorr)
	nameSeq     atomic.Uint64 // generated names; starts at random (see genName)
	live        atomic.Int64
	threads     sync.WaitGroup // the goroutines of thread-style actors
	threadGs    sync.Map       // goroutine id → struct{}: those goroutines, while they run (onThread)
	threadN     atomic.Int64   // how many threadGs holds
	deadLetters atomic.Uint64
	deadLog     *deadLetterLog
	mailboxFull atomic.Uint64

	closing  atomic.Bool
	drained  chan struct{}
	drainOne sync.Once

	// replies holds the System.Asks waiting for their replies. Last, and
	// behind a pointer, so that its 2 KiB leave the hot fields above as
	// they were (their cache lines are shared by every loop).
	replies *replyTable
}

// New starts a system. Its actors reach no other peer: a system with a
// transport is made by package actor/transport's NewSystem.
func New(opts ...Option) (*System, error) { return newSystem(opts, nil) }

// newSystem starts a system; bind, when not nil, gives it its transport
// (see spi.Hooks.NewSystem) before anything can use it.
func newSystem(opts []Option, bind func(*System) (remote, groups any, err error)) (*System, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &System{cfg: cfg, peer: cfg.peer, names: newRegistry(), drained: make(chan struct{}), replies: new(replyTable)}
	s.deadLog = newDeadLetterLog(cfg.deadKeep, cfg.deadDescribe)
	s.port.s = s
	s.nameSeq.Store(randomNameBase())
	g, err := eventloop.New(
		eventloop.WithLoops(cfg.loops),
		eventloop.WithWatchdog(cfg.watchdog),
		eventloop.WithSpin(cfg.spin),
		eventloop.WithLogger(cfg.logger),
	)
	if err != nil {
		return nil, fmt.Errorf("actor: %w", err)
	}
	s.group = g
	s.residents = make([]residents, g.Len())
	if bind != nil {
		if err := s.bind(bind); err != nil {
			g.Shutdown(context.Background(), 0)
			return nil, err
		}
	}
	s.batch, _ = s.cfg.remote.(batchRemote)
	s.direct, _ = s.cfg.remote.(directRemote)
	s.startGCFloor()
	return s, nil
}

// Peer returns the ID of the peer this system is.
func (s *System) Peer() string { return s.peer }

// AcceptsUnknownTypes reports whether a message of a type this node does
// not know, from another peer, may go to the local actor to: only when it
// was spawned with AcceptUnknownTypes (a missing actor does not: one
// spawned under its name before the message is handed over may not take
// them). For transports. Safe for concurrent use.
func (p *port) AcceptsUnknownTypes(to Ref) bool {
	s := p.s
	c := s.names.load(to.Name())
	return c != nil && c.opts&oAcceptUnknown != 0
}

// Whereis returns the Ref of the local actor registered as name.
func (s *System) Whereis(name string) (Ref, bool) {
	c := s.names.load(name)
	if c == nil {
		return Ref{}, false
	}
	return c.Self(), true
}

// Actors returns how many actors live on this system.
func (s *System) Actors() int { return int(s.live.Load()) }

// MailboxOverflows returns how many messages were dead letters with
// ErrMailboxFull so far (see WithMailboxLimit and transport.WithRemoteBacklog).
func (s *System) MailboxOverflows() uint64 { return s.mailboxFull.Load() }

// DeadLetters returns how many messages reached no actor so far.
func (s *System) DeadLetters() uint64 { return s.deadLetters.Load() }

// namesChanged calls the transport.WithNamesChanged hook when name is public.
func (s *System) namesChanged(name string) {
	if s.cfg.names != nil && name[0] != '$' {
		s.cfg.names()
	}
}

func (s *System) actorGone() {
	if s.live.Add(-1) == 0 && s.closing.Load() {
		s.drainOne.Do(func() { close(s.drained) })
	}
}

// InEventLoop reports whether the caller runs on one of the system's event
// loops, where a call that waits is refused with ErrBlockingCall rather than
// stall the loop. While a loop runs a task it costs about a microsecond.
func (s *System) InEventLoop() bool { return s.group.InLoop() }

// Shutdown stops the system: no new actors, every actor gets an untrappable
// exit signal with ErrShutdown (its monitors and links see that reason),
// then the event loops drain and stop. It returns when all is stopped or ctx
// ends (the error then wraps ctx.Err()). It must not be called from an
// actor, thread-style ones included (ErrBlockingCall: it would wait for
// the caller itself). A thread-style actor blocked in a call of its own stops only when
// that call returns and it next calls Receive (see Thread.Receive):
// Shutdown waits for it until ctx ends.
func (s *System) Shutdown(ctx context.Context) error {
	if s.group.InLoop() || s.onThread() {
		return ErrBlockingCall
	}
	s.closing.Store(true)
	for _, c := range s.names.all() {
		c.push(s.newNode(exitSignal{Reason: ErrShutdown, Kill: true}, Ref{}, 0, kindSignal))
	}
	s.replies.failAll(func() *node {
		return s.newNode(exitSignal{Reason: ErrShutdown, Kill: true}, Ref{}, 0, kindSignal)
	})
	if s.live.Load() == 0 {
		s.drainOne.Do(func() { close(s.drained) })
	}
	defer s.stopGCFloor()
	select {
	case <-s.drained:
		// Every actor terminated: a thread's goroutine has only its
		// own nodes to give back.
		s.threads.Wait()
	case <-ctx.Done():
		s.group.Shutdown(ctx, 0)
		return fmt.Errorf("actor: shutdown with %d actors still running: %w", s.live.Load(), ctx.Err())
	}
	return s.group.Shutdown(ctx, 10*time.Millisecond)
}

// Names returns the registered names of the local actors that are not
// generated (their public names), sorted.
func (s *System) Names() []string {
	var out []string
	for _, c := range s.names.all() {
		if name := c.name(); name[0] != '$' {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// groupNames is group.Names.
func (s *System) groupNames() []string {
	s.groups.mu.RLock()
	out := make([]string, 0, len(s.groups.members))
	for g := range s.groups.members {
		out = append(out, g)
	}
	s.groups.mu.RUnlock()
	slices.Sort(out)
	return out
}
