package actor

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// Option configures a System.
type Option func(*config) error

type config struct {
	loops      int
	throughput int
	watchdog   time.Duration
	spin       time.Duration
	logger     *slog.Logger
	deadLetter func(DeadLetter)
	peer       string
	remote     remoteTransport
	groups     groupTransport
	names      func() // public names changed
	watchLimit int    // monitors and links one other peer may hold
	watchTotal int    // monitors and links all other peers may hold
	// remoteBacklog is the most bytes of messages charged to Credits
	// that one actor may hold unhandled.
	remoteBacklog int64

	// deadKeep and deadDescribe: WithDeadLetterLog.
	deadKeep     int
	deadDescribe func(any) (string, int)
	gcFloor      int64 // bytes; 0: no GC heap floor
}

func defaultConfig() config {
	return config{
		loops:      runtime.GOMAXPROCS(0),
		throughput: 64,
		watchdog:   100 * time.Millisecond,
		spin:       0,
		logger:     slog.Default(),
		peer:       "local",
		watchLimit: spi.DefaultRemoteWatchLimit,
		deadKeep:   DefaultDeadLetterKeep,
		watchTotal: spi.DefaultRemoteWatchTotal,

		remoteBacklog: spi.DefaultRemoteBacklog,
		gcFloor:       DefaultGCHeapFloor,
	}
}

func (c *config) validate() error {
	switch {
	case c.loops < 1:
		return fmt.Errorf("actor: loops must be at least 1, got %d", c.loops)
	case c.throughput < 1:
		return fmt.Errorf("actor: throughput must be at least 1, got %d", c.throughput)
	case c.watchdog < 0:
		return fmt.Errorf("actor: watchdog threshold must not be negative, got %v", c.watchdog)
	case c.spin < 0:
		return fmt.Errorf("actor: spin must not be negative, got %v", c.spin)
	case c.logger == nil:
		return errors.New("actor: logger must not be nil")
	case c.remoteBacklog < 1:
		return fmt.Errorf("actor: remote backlog must be at least 1 byte, got %d", c.remoteBacklog)
	case c.deadKeep < 0 || c.deadKeep > maxDeadLetterKeep:
		return fmt.Errorf("actor: dead letters kept must be 0 to %d, got %d", maxDeadLetterKeep, c.deadKeep)
	case c.gcFloor < 0 || c.gcFloor > maxGCHeapFloor:
		return fmt.Errorf("actor: GC heap floor must be 0 to 1 TiB, got %d", c.gcFloor)
	case c.watchLimit < 1:
		return fmt.Errorf("actor: remote watch limit must be at least 1, got %d", c.watchLimit)
	case c.watchTotal < 1:
		return fmt.Errorf("actor: remote watch total must be at least 1, got %d", c.watchTotal)
	}
	if _, err := NewRef(c.peer, "x"); err != nil {
		return fmt.Errorf("actor: peer ID: %w", err)
	}
	return nil
}

// WithLoops sets the number of event loops (default GOMAXPROCS).
func WithLoops(n int) Option { return func(c *config) error { c.loops = n; return nil } }

// WithThroughput sets how many messages an actor handles per activation
// before it yields its loop to other actors (default 64).
func WithThroughput(n int) Option { return func(c *config) error { c.throughput = n; return nil } }

// WithWatchdog sets how long an actor may block its loop before the loop's
// other actors move to a fresh carrier goroutine (default 100 ms; 0 turns the
// watchdog off).
func WithWatchdog(d time.Duration) Option {
	return func(c *config) error { c.watchdog = d; return nil }
}

// WithSpin sets how long an idle loop spins before it parks (default 0: on
// the 2-core machines measured, spinning slowed cross-loop traffic down).
func WithSpin(d time.Duration) Option { return func(c *config) error { c.spin = d; return nil } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.logger = l; return nil } }

// withNamesChanged is transport.WithNamesChanged.
func withNamesChanged(f func()) Option {
	return func(c *config) error { c.names = f; return nil }
}

// WithDeadLetterHook sets a function called with every dead letter. It runs
// on the goroutine that found the message undeliverable, often an event
// loop: it must be quick and must not block. A panic in it is logged and
// goes no further.
func WithDeadLetterHook(f func(DeadLetter)) Option {
	return func(c *config) error { c.deadLetter = f; return nil }
}

// WithDeadLetterLog sets how many of the latest dead letters the system
// remembers for System.RecentDeadLetters (default DefaultDeadLetterKeep;
// 0 remembers none, at most 65536) and describe, which tells a message's
// type name and encoded size (-1: not known) for the record; nil, or an
// empty name, names the Go type (as package.Type) and leaves the size
// unknown. describe runs where the dead
// letter was found, often an event loop: it must be quick. The records
// hold no message bodies.
func WithDeadLetterLog(keep int, describe func(msg any) (typeName string, size int)) Option {
	return func(c *config) error { c.deadKeep, c.deadDescribe = keep, describe; return nil }
}

// maxDeadLetterKeep caps WithDeadLetterLog's keep.
const maxDeadLetterKeep = 1 << 16

// WithPeer sets the ID of the peer this system is (default "local"): Refs
// with this peer are local, all others go to the transport (see
// package actor/transport).
func WithPeer(id string) Option { return func(c *config) error { c.peer = id; return nil } }

// withRemote sets the transport for Refs of other peers (transport.NewSystem's
// bind does). Without one, messages to them are dead letters with ErrNoRoute.
func withRemote(r remoteTransport) Option { return func(c *config) error { c.remote = r; return nil } }

// withRemoteWatchLimit is transport.WithRemoteWatchLimit.
func withRemoteWatchLimit(n int) Option {
	return func(c *config) error { c.watchLimit = n; return nil }
}

// withRemoteWatchTotal is transport.WithRemoteWatchTotal.
func withRemoteWatchTotal(n int) Option {
	return func(c *config) error { c.watchTotal = n; return nil }
}

// withRemoteBacklog is transport.WithRemoteBacklog.
func withRemoteBacklog(bytes int64) Option {
	return func(c *config) error { c.remoteBacklog = bytes; return nil }
}

// WithGCHeapFloor sets the GC heap floor (default DefaultGCHeapFloor,
// 32 MiB; 0 turns it off; at most 1 TiB): the smallest heap goal Go's
// collector gets while the system runs. An actor program's live heap is
// often a few MiB, and Go collects whenever the heap has grown by as much
// as it holds live (GOGC=100), at least every 4 MiB allocated: hundreds
// of collections a second for an actor that allocates per message, each
// with its write barriers. With a floor, after every collection whose
// live heap L would give a smaller goal (at GOGC=100: L twice, plus the
// goroutine stacks and globals the collector scans, below the floor), the
// GC percent is raised so that the next goal is the floor; once L is big
// enough, it is back where it was. The heap may then grow to the floor
// between collections: up to that much more resident memory (a node with
// libp2p: about 15 MiB more at the default, docs/benchmarks.md) for fewer
// collections.
//
// The GC percent is one for the process, so the floor is too: the largest
// floor of the running systems is in force, and when the last of them
// shuts down the GC percent the process had comes back. It never comes
// into force when the process has set GOGC or GOMEMLIMIT in its
// environment, a memory limit with debug.SetMemoryLimit, or turned the GC
// off; and it goes out of force for good when the program calls
// debug.SetGCPercent itself: the program's own settings win. Nothing else
// process-wide changes. System.GCHeapFloor says what is in force.
func WithGCHeapFloor(bytes int64) Option {
	return func(c *config) error { c.gcFloor = bytes; return nil }
}
