package spi

import "github.com/troupe-mesh/troupe/actor/eventloop"

// Hooks are the functions of package actor that package actor/transport
// calls, with S actor.System, R actor.Ref, O actor.Option and SO
// actor.SpawnOption. Actor's init stores a *Hooks[actor.System,
// actor.Ref, actor.Option, actor.SpawnOption] in Actor;
// transport asserts it once, in its own package initialization (which
// runs after actor's init: transport imports actor). Each is a direct
// call of a function value: no interface, no allocation.
type Hooks[S, R, O, SO any] struct {
	// NewSystem starts a system with opts; once the system exists and
	// before it is returned, bind gives it its remote and group
	// transport (each nil or of the method set of transport.Remote and
	// transport.GroupTransport). An error of bind stops the system.
	NewSystem func(opts []O, bind func(*S) (remote, groups any, err error)) (*S, error)

	Deliver             func(*S, Envelope[R])
	DeliverBatch        func(*S, []Envelope[R])
	Bounce              func(*S, Envelope[R], error)
	PeerDown            func(*S, string)
	ShedSaved           func(*S, *Credit) int
	AcceptsUnknownTypes func(*S, R) bool
	NewInbound          func(*S) Inbound[R]

	DeliverPresence    func(s *S, group string, member R, joined bool) bool
	PeerLeftGroups     func(s *S, peer string)
	ForgetGroupMembers func(s *S, group string)
	RemoteMembers      func(*S) map[string][]R
	DeliverGroup       func(s *S, group string, from R, msg any) int

	RemoteEdges   func(s *S, peer string) int
	RemoteWatches func(*S) int
	Loops         func(*S) *eventloop.Group
	SystemName    func() SO

	RemoteBacklog    func(bytes int64) O
	RemoteWatchLimit func(n int) O
	RemoteWatchTotal func(n int) O
	NamesChanged     func(f func()) O
}

// Inbound is one of actor's inbounds as the functions transport's Inbound
// calls. Add takes the envelope by value: a pointer passed to a function
// value escapes (the compiler cannot see that Add keeps nothing), which
// would cost a heap allocation per message; a copy on the stack does not.
type Inbound[R any] struct {
	Add       func(Envelope[R])
	Len       func() int
	Flush     func()
	Close     func()
	SetCredit func(*Credit)
}

// Actor is the *Hooks[actor.System, actor.Ref, actor.Option,
// actor.SpawnOption] that actor's init sets.
var Actor any
