package eventloop

import "errors"

// ErrClosed is returned by Submit, Execute and Shutdown once a loop has
// terminated and no longer accepts tasks.
var ErrClosed = errors.New("eventloop: closed")
