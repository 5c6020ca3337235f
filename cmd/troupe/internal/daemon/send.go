package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// What 'troupe send' can say of a message. A plain send gets no answer
// from another peer, even when the actor is missing there (the message
// becomes a dead letter on that peer). So a send to another peer goes as
// an Ask that waits briefly (-wait, default 2 s): an actor that replies
// proves delivery, the other peer's bounce (Undeliverable: no such
// actor, unknown type, full mailbox) is an error naming what it said, and
// silence is "delivery unconfirmed". A receiver sees the same message
// either way; one that replies after the wait leaves a late-reply dead
// letter here. With -wait 0 the message goes as a plain send.

// DefaultSendWait is how long a send to another peer waits for a bounce.
const DefaultSendWait = 2 * time.Second

// errBounced marks a send that another peer answered as undeliverable.
var errBounced = errors.New("the other peer answered")

// send sends msg to ref, local or remote (see above).
func (d *Daemon) send(ctx context.Context, ref actor.Ref, msg any, wait time.Duration) (control.SendResult, error) {
	r := control.SendResult{To: ref.String()}
	if ref.Peer() == d.node.System().Peer() || wait <= 0 {
		if err := d.node.SendCtx(ctx, ref, msg); err != nil {
			return r, fmt.Errorf("sending to %s: %w", ref, err)
		}
		r.Status = "unconfirmed"
		if ref.Peer() == d.node.System().Peer() {
			r.Status = "sent"
		}
		return r, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_, err := d.node.System().Ask(wctx, ref, msg)
	switch {
	case err == nil:
		r.Status = "delivered"
	case errors.Is(wctx.Err(), context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.Canceled):
		// The wait is over (the request's deadline, at least as far
		// off, may end at the same time: handle).
		r.Status, r.WaitMS = "unconfirmed", wait.Milliseconds()
	case ctx.Err() != nil:
		return r, fmt.Errorf("sending to %s: %w", ref, ctx.Err())
	default:
		cause := askCause(err, ref.Peer())
		if isBounce(cause) {
			return r, fmt.Errorf("sending to %s: %w: %w", ref, errBounced, cause)
		}
		return r, fmt.Errorf("sending to %s: %w", ref, cause)
	}
	return r, nil
}

// isBounce reports whether err is what another peer answers for a message
// it could not deliver.
func isBounce(err error) bool {
	for _, s := range []error{actor.ErrNoSuchActor, actor.ErrUnknownType, actor.ErrMailboxFull} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// askCause is the error of a failed Ask without actor's "actor: ask
// <ref>:" wrapping, which the daemon's own "asking <ref>" says already.
// Dial phrases that repeat the ID of peer, the target's, go too
// (cli.SayOnce).
func askCause(err error, peer string) error {
	if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), "actor: ask ") {
		err = inner
	}
	return cli.SayOnce(err, peer)
}

// ParseTarget parses send's and ask's address: an actor address
// (parseActorAddr), or a bare actor name (bare set, ref zero), which the
// daemon finds anywhere in the mesh with Node.Whereis.
func ParseTarget(s string) (ref actor.Ref, bare bool, err error) {
	if strings.Contains(s, "/") {
		ref, err = parseActorAddr(s)
		return ref, false, err
	}
	if _, err := actor.NewRef("p", s); err != nil {
		return actor.Ref{}, false, fmt.Errorf("%w: address %q is neither <peer ID>/<actor name> nor an actor name", config.ErrUsage, s)
	}
	return actor.Ref{}, true, nil
}

// parseActorAddr parses "<peer ID>/<name>" or "/p2p/<peer ID>/actor/<name>".
func parseActorAddr(s string) (actor.Ref, error) {
	ref, err := actor.ParseRef(s)
	if err != nil {
		return actor.Ref{}, fmt.Errorf("%w: address %q is not <peer ID>/<actor name>", config.ErrUsage, s)
	}
	if _, err := libp2ppeer.Decode(ref.Peer()); err != nil {
		return actor.Ref{}, fmt.Errorf("%w: address %q: %q is not a peer ID", config.ErrUsage, s, ref.Peer())
	}
	return ref, nil
}
