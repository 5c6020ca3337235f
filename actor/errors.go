package actor

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNameTaken: a Spawn named an actor whose name is registered already.
	ErrNameTaken = errors.New("actor: name taken")
	// ErrInvalidName: a name is empty, too long, not UTF-8, holds '/', a space
	// or a control character, or starts with the reserved '$'.
	ErrInvalidName = errors.New("actor: invalid name")
	// ErrInvalidRef: text that is not "<peer>/<name>" nor "/p2p/<peer>/actor/<name>".
	ErrInvalidRef = errors.New("actor: invalid ref")
	// ErrNilBehavior: Spawn was given a nil behavior.
	ErrNilBehavior = errors.New("actor: nil behavior")
	// ErrNoSuchActor: no actor of that name lives on its peer (never did, or
	// stopped). It is the reason of dead letters, of a Down for a monitor set
	// on a dead actor, and of an Ask whose target is gone.
	ErrNoSuchActor = errors.New("actor: no such actor")
	// ErrNoRoute: the Ref names another peer and the system has no transport
	// that reaches it.
	ErrNoRoute = errors.New("actor: no route")
	// ErrClosed: the system is shut down or shutting down.
	ErrClosed = errors.New("actor: system closed")
	// ErrBlockingCall: a blocking API (System.Ask) was called on an event
	// loop, where it would deadlock; inside an actor use Context.Ask.
	ErrBlockingCall = errors.New("actor: blocking call on an event loop")
	// ErrBadReceive: Receive or ReceiveWithin was called with no cases, a nil
	// case, a negative timeout, a Timeout case without ReceiveWithin (or
	// ReceiveWithin without one), a Loop beside other cases or holding a
	// Timeout, or twice in one step; or, in a thread-style actor, a Loop,
	// or the Context's own (event) Receive or Ask. The actor stops with
	// this reason.
	ErrBadReceive = errors.New("actor: bad receive")
	// ErrGoexit is the exit reason of a thread-style actor whose goroutine
	// called runtime.Goexit (as testing's FailNow does).
	ErrGoexit = errors.New("actor: thread called runtime.Goexit")
	// ErrReplyType is the error of AskAs and AskThen when the reply is not
	// of the type asked for.
	ErrReplyType = errors.New("actor: reply of an unexpected type")
	// ErrKilled is the reason of an actor killed by an untrappable exit signal.
	ErrKilled = errors.New("actor: killed")
	// ErrShutdown is the reason of actors stopped by System.Shutdown or by
	// their supervisor.
	ErrShutdown = errors.New("actor: shutdown")
	// ErrNodeDown is the reason in Down and Exit when the peer that hosted the
	// watched or linked actor went away.
	ErrNodeDown = errors.New("actor: node down")
	// ErrSystemLimit is the reason of the Down that answers a monitor, and
	// of the exit signal that answers a link, which an actor of another
	// peer asked for beyond transport.WithRemoteWatchLimit: the monitor or link was
	// not made.
	ErrSystemLimit = errors.New("actor: system limit reached")
	// ErrLinkRefused is the reason of the exit signal that answers a link
	// request from another peer's actor to an actor spawned without
	// AcceptRemoteLinks: the link was not made.
	ErrLinkRefused = errors.New("actor: remote link refused")
	// ErrUnknownType is the dead-letter reason of a message from another
	// peer whose type the node does not know, sent to an actor spawned
	// without AcceptUnknownTypes.
	ErrUnknownType = errors.New("actor: message of an unknown type")
	// ErrMailboxFull is the dead-letter reason of a message refused by its
	// actor's WithMailboxLimit, or beyond its transport.WithRemoteBacklog; wrapped,
	// of a saved message dropped by transport.Port.ShedSaved.
	ErrMailboxFull = errors.New("actor: mailbox full")
	// ErrRestartIntensity is the reason of a supervisor that gave up because
	// its children failed more often than its restart intensity allows.
	ErrRestartIntensity = errors.New("actor: restart intensity exceeded")
)

// PanicError is the exit reason of an actor whose behavior panicked.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the stack of the panicking goroutine
}

// Error describes the panic.
func (e *PanicError) Error() string { return fmt.Sprintf("actor: panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// DeadLetter describes a message that reached no actor.
type DeadLetter struct {
	To     Ref   // the actor the message was addressed to
	From   Ref   // the sender; zero when sent from plain Go code
	Msg    any   // the undelivered message (a user message or a reply)
	Reason error // ErrNoSuchActor, ErrNoRoute, or what the Remote reported
}

// ErrLateReply is the dead-letter reason of a reply that arrived after its
// Ask had timed out or been cancelled.
var ErrLateReply = errors.New("actor: late reply")
