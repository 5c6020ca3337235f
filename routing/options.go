package routing

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures New.
type Option func(*config) error

// apply applies opts over c.
func apply(c config, opts []Option) (config, error) {
	for i, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: option %d is nil", ErrInvalidConfig, i)
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithLogger sets the logger (default slog.Default()) (New).
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.Logger = l; return nil } }

// WithMaxFrame is the largest frame sent or accepted (default
// codec.DefaultMaxFrame; at most codec.MaxFrameLimit) (New).
func WithMaxFrame(n int) Option { return func(c *config) error { c.MaxFrame = n; return nil } }

// WithLinkQueue is how many messages may wait per peer and protocol
// (default 65,536) (New). One-way messages may fill three quarters of
// it, Ask requests seven eighths, replies all of it (see
// docs/routing.md, "Room for replies and asks").
func WithLinkQueue(n int) Option { return func(c *config) error { c.LinkQueue = n; return nil } }

// WithProtected names actors that other peers may not link to or send
// exit signals to (a peer's own service actors, such as "$node"): such
// signals are dropped; monitors and messages reach them as usual (New).
func WithProtected(names ...string) Option {
	return func(c *config) error { c.Protected = append(c.Protected, names...); return nil }
}

// WithIncarnation is the number this start of the peer goes by (default:
// the router draws one). Give the host AgentVersion(n) as its identify
// agent version (libp2p.UserAgent), so that every peer learns it when a
// connection is set up, both ways, before any stream (New).
func WithIncarnation(n uint64) Option { return func(c *config) error { c.Incarnation = n; return nil } }

// WithPeerBudget is the bytes of messages one peer may have delivered to
// local actors that did not handle them yet (default DefaultPeerBudget);
// at it, the peer's streams pause until the actors handled half (see
// budget.go) (New).
func WithPeerBudget(bytes int64) Option {
	return func(c *config) error { c.PeerBudget = bytes; return nil }
}

// WithPauseGrace is how long a peer may stay paused at its budget before
// the messages its actors saved for a later receive are shed (default
// DefaultPauseGrace; see budget.go) (New).
func WithPauseGrace(d time.Duration) Option {
	return func(c *config) error { c.PauseGrace = d; return nil }
}
