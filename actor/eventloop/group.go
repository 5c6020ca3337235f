package eventloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Option configures a Group.
type Option func(*config) error

type config struct {
	loops     int
	watchdog  time.Duration
	spin      time.Duration
	maxBatch  time.Duration
	logger    *slog.Logger
	onBlocked func(loop int, task string)
}

func defaultConfig() config {
	return config{
		loops:    runtime.GOMAXPROCS(0),
		watchdog: 100 * time.Millisecond,
		spin:     0,
		maxBatch: time.Millisecond,
		logger:   slog.Default(),
	}
}

func (c *config) validate() error {
	switch {
	case c.loops < 1:
		return fmt.Errorf("eventloop: loops must be at least 1, got %d", c.loops)
	case c.watchdog < 0:
		return fmt.Errorf("eventloop: watchdog threshold must not be negative, got %v", c.watchdog)
	case c.spin < 0:
		return fmt.Errorf("eventloop: spin must not be negative, got %v", c.spin)
	case c.maxBatch <= 0:
		return fmt.Errorf("eventloop: max batch time must be positive, got %v", c.maxBatch)
	case c.logger == nil:
		return errors.New("eventloop: logger must not be nil")
	}
	return nil
}

// WithLoops sets the number of loops (default GOMAXPROCS).
func WithLoops(n int) Option { return func(c *config) error { c.loops = n; return nil } }

// WithWatchdog sets how long a task may run before its loop's queue moves
// to a fresh carrier (default 100 ms); 0 turns the watchdog off.
func WithWatchdog(threshold time.Duration) Option {
	return func(c *config) error { c.watchdog = threshold; return nil }
}

// WithSpin sets how long an idle loop spins before it parks. The default, 0,
// parks at once: on the 2-core machines measured, spinning made cross-loop
// traffic slower (it takes the core the other loop needs), and a parked
// loop woken through its channel is handed the waker's processor.
func WithSpin(d time.Duration) Option { return func(c *config) error { c.spin = d; return nil } }

// WithMaxBatch sets how long a loop runs tasks before it looks at its
// timers again (default 1 ms).
func WithMaxBatch(d time.Duration) Option {
	return func(c *config) error { c.maxBatch = d; return nil }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.logger = l; return nil } }

// WithBlockedHook sets a function called, on the watchdog goroutine, each
// time a blocked task's loop is handed to a fresh carrier.
func WithBlockedHook(f func(loop int, task string)) Option {
	return func(c *config) error { c.onBlocked = f; return nil }
}

// Group is a fixed set of loops with a round-robin chooser and a blocking
// watchdog. All methods are safe for concurrent use.
type Group struct {
	cfg   config
	loops []*Loop
	mask  uint32 // len(loops)-1 when that is a power of two, else 0
	next  atomic.Uint32
	epoch time.Time

	carriers     sync.Map // goroutine id -> *Loop
	replacements atomic.Uint64
	dropped      atomic.Uint64

	shuttingDown atomic.Bool
	forced       atomic.Bool
	quietNanos   atomic.Int64
	stopWatch    chan struct{}
	shutOnce     sync.Once
	watchOnce    sync.Once
	wg           sync.WaitGroup
}

// New starts a group of loops.
func New(opts ...Option) (*Group, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &Group{cfg: cfg, epoch: time.Now(), stopWatch: make(chan struct{})}
	if n := cfg.loops; n&(n-1) == 0 {
		g.mask = uint32(n - 1)
	}
	g.loops = make([]*Loop, cfg.loops)
	for i := range g.loops {
		g.loops[i] = newLoop(g, i)
	}
	g.wg.Add(len(g.loops))
	for _, l := range g.loops {
		go l.carry()
	}
	if cfg.watchdog > 0 {
		g.wg.Add(1)
		go g.watch()
	}
	return g, nil
}

// Len returns the number of loops.
func (g *Group) Len() int { return len(g.loops) }

// Loop returns the i-th loop.
func (g *Group) Loop(i int) *Loop { return g.loops[i] }

// Next picks a loop round-robin.
func (g *Group) Next() *Loop {
	n := g.next.Add(1) - 1
	if g.mask != 0 || len(g.loops) == 1 {
		return g.loops[n&g.mask]
	}
	return g.loops[n%uint32(len(g.loops))]
}

// InLoop reports whether the caller runs a task on a loop of the group.
// Blocking APIs use it to refuse to deadlock a loop. When no loop is running
// a task it answers from the loops' run counters alone; otherwise it reads
// the goroutine's id, which costs about a microsecond. A carrier retired by
// the watchdog may not count: blocking there stalls no loop.
func (g *Group) InLoop() bool {
	busy := false
	for _, l := range g.loops {
		if l.run.Load()&1 == 1 {
			busy = true
			break
		}
	}
	if !busy {
		return false
	}
	_, ok := g.carriers.Load(goid())
	return ok
}

// Replacements returns how many times the watchdog handed a loop to a fresh
// carrier because a task blocked.
func (g *Group) Replacements() uint64 { return g.replacements.Load() }

func (g *Group) quiet() time.Duration { return time.Duration(g.quietNanos.Load()) }

// Shutdown stops the group gracefully: timers are dropped at once, tasks keep
// running until every loop has been quiet for `quiet`, then the loops stop
// accepting tasks and exit. When ctx ends first, the loops stop after their
// current task, the queued tasks are dropped, and the error wraps ctx.Err()
// and says how many were dropped. Calling Shutdown again waits again.
func (g *Group) Shutdown(ctx context.Context, quiet time.Duration) error {
	g.shutOnce.Do(func() {
		g.quietNanos.Store(int64(max(quiet, 0)))
		g.shuttingDown.Store(true)
		for _, l := range g.loops {
			l.wake(awake)
		}
	})
	for _, l := range g.loops {
		select {
		case <-l.done:
		case <-ctx.Done():
			g.forced.Store(true)
			for _, l := range g.loops {
				l.wake(awake)
			}
			g.stopWatchdog() // the loops end now; nothing is left to watch
			return fmt.Errorf("eventloop: shutdown interrupted, %d tasks dropped: %w", g.dropped.Load(), ctx.Err())
		}
	}
	g.stopWatchdog()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("eventloop: shutdown waits for a blocked task: %w", ctx.Err())
	}
}

func (g *Group) stopWatchdog() { g.watchOnce.Do(func() { close(g.stopWatch) }) }
