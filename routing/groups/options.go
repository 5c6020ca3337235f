package groups

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// config is a Groups' configuration: New's arguments and options.
type config struct {
	Host     host.Host
	Registry *codec.Registry
	Port     *transport.Port // the actor system's
	Mesh     string
	Logger   *slog.Logger
	OnChange func()                   // WithOnChange; nil: nobody is told
	Departed func(libp2ppeer.ID) bool // WithDeparture; nil: every disconnection

	timings timings // tests only: shorter waits (zero: the defaults)
}

// timings are the waits of a Groups that tests shorten. No option sets
// them, so only this package's tests do; a zero field takes its default.
type timings struct {
	// presenceRenew is how often a peer announces its members of each
	// group again (see presence.go).
	presenceRenew time.Duration
}

// withDefaults returns t with each zero field set to its default.
func (t timings) withDefaults() timings {
	if t.presenceRenew <= 0 {
		t.presenceRenew = 30 * time.Second
	}
	return t
}

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

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.Logger = l; return nil } }

// WithOnChange is called after the node joined a group (its first local
// member) or left one (its last): what the node advertises changed. It is
// called on an event loop or the publisher goroutine, with the Groups'
// lock held: it must not block, nor call the Groups.
func WithOnChange(f func()) Option { return func(c *config) error { c.OnChange = f; return nil } }

// WithDeparture says whether a peer that disconnected left the mesh
// (default: always). When it did, its members leave their groups here at
// once; when not (a connection trimmed in a mesh larger than the
// connection budget), they stay while their presence is renewed, as the
// members of peers this node was never connected to do, and leave when it
// is not for three renewals and a half.
func WithDeparture(left func(libp2ppeer.ID) bool) Option {
	return func(c *config) error { c.Departed = left; return nil }
}
