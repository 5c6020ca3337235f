package routing

import (
	"errors"
	"fmt"

	"github.com/troupe-mesh/troupe/actor"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrLinkFull: the queue towards a peer is full; the message became a
	// dead letter.
	ErrLinkFull = errors.New("routing: link full")
	// ErrTooLarge: a message is larger than the maximum frame.
	ErrTooLarge = errors.New("routing: message too large")
	// ErrBadPeer: a Ref names a peer whose ID does not parse.
	ErrBadPeer = errors.New("routing: bad peer ID")
	// ErrClosed: the router is closed. It matches actor.ErrClosed too, so
	// that a caller of a node need test for one closed error only.
	ErrClosed = fmt.Errorf("routing: closed (%w)", actor.ErrClosed)
	// ErrInvalidConfig: New was given no host, registry or port.
	ErrInvalidConfig = errors.New("routing: invalid config")
	// ErrUnreachable: no stream to the peer could be opened.
	ErrUnreachable = errors.New("routing: peer unreachable")
	// ErrStreamBroken: the stream that was carrying the message broke;
	// the message may or may not have reached the peer. When the stream's
	// connection went away, the error also matches actor.ErrNodeDown.
	ErrStreamBroken = errors.New("routing: stream broke")
	// ErrRemote: an error that came from another peer and matches none
	// of the sentinels Troupe knows (a RemoteError wraps it). Its kind of
	// dead letter is "remote error" (actor.DeadLetterKind), whatever the
	// other peer wrote: a peer cannot make up kinds.
	ErrRemote = errors.New("routing: remote error")
)

// RemoteError is an exit reason or error that came from another peer and
// matches none of the sentinels Troupe knows.
type RemoteError struct {
	Text string // the error's text on the other peer
}

// Error returns the text the other peer sent.
func (e *RemoteError) Error() string { return e.Text }

// Unwrap returns ErrRemote.
func (e *RemoteError) Unwrap() error { return ErrRemote }
