package groups

import "errors"

// Sentinel errors. Test for them with errors.Is. A group message that
// cannot go fails with routing's sentinels, as a message to one actor
// does: routing.ErrTooLarge (over MaxMessage) or routing.ErrLinkFull (the
// publisher's queue is full).
var (
	// ErrInvalidConfig: New was given no host, registry, mesh name or
	// port, or a nil option.
	ErrInvalidConfig = errors.New("groups: invalid config")
)
