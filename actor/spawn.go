package actor

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
)

// Spawning: the spawn options, names given and generated, and starting
// an actor on its loop.

// SpawnOption configures one Spawn.
type SpawnOption func(*spawnConfig)

type spawnConfig struct {
	colocate bool
	system   bool
	opts     uint8 // Context.opts
	limit    int   // mailbox limit; 0: none
}

// systemName is transport.SystemName: the spawn may use a name starting
// with '$', reserved for generated names and for Troupe's own actors.
func systemName() SpawnOption { return func(c *spawnConfig) { c.system = true } }

// AcceptRemoteLinks lets actors of other peers link to the new actor, and
// so stop it with an exit signal along that link (as a disconnection of
// their peer does, with ErrNodeDown, unless it traps exits). Without it, a
// link request from another peer is answered with an exit signal of reason
// ErrLinkRefused and no link is made; links the actor makes itself, and
// monitors from anyone, are allowed either way. No peer can kill an actor
// without a link, nor with one: a remote exit signal is never untrappable.
func AcceptRemoteLinks() SpawnOption {
	return func(c *spawnConfig) { c.opts |= oAcceptRemoteLinks }
}

// AcceptUnknownTypes lets the new actor receive messages from other peers
// whose type this node's registry does not know (they arrive as a
// codec.Raw holding the type name and body). Without it such a message is
// a dead letter whose reason wraps ErrUnknownType (an Ask fails with it at
// once), so that it cannot sit unmatched in the mailbox of an actor with
// typed cases. Replies to an Ask are taken either way.
func AcceptUnknownTypes() SpawnOption {
	return func(c *spawnConfig) { c.opts |= oAcceptUnknown }
}

// WithMailboxLimit caps the user messages the new actor's mailbox holds
// (waiting, or saved for a later receive) at n: a message beyond it is a
// dead letter with ErrMailboxFull (an Ask fails at once), counted by
// System.MailboxOverflows. Replies and signals are never refused. A limit
// of 0 or less means none, as without the option.
func WithMailboxLimit(n int) SpawnOption {
	return func(c *spawnConfig) { c.limit = min(max(n, 0), 1<<30) }
}

// Colocated starts the new actor on its parent's event loop instead of the
// next loop round-robin, so that talk between the two does not cross cores
// from the start (an actor woken by an actor of another loop may move
// there later). It only has an effect on Context.Spawn and
// Context.SpawnLink.
func Colocated() SpawnOption { return func(c *spawnConfig) { c.colocate = true } }

// Spawn starts an actor running b from plain Go code. name registers it on
// this peer ("" for a generated name); it fails with ErrNameTaken when the
// name is in use, ErrInvalidName when malformed. The behavior runs later,
// on the actor's loop.
func (s *System) Spawn(name string, b Behavior, opts ...SpawnOption) (Ref, error) {
	c, err := s.spawn(name, b, nil, opts)
	if err != nil {
		return Ref{}, err
	}
	return c.start(), nil
}

// Spawn starts a child actor; see System.Spawn.
func (c *Context) Spawn(name string, b Behavior, opts ...SpawnOption) (Ref, error) {
	child, err := c.sys.spawn(name, b, c, opts)
	if err != nil {
		return Ref{}, err
	}
	return child.start(), nil
}

// SpawnLink starts a child actor linked to this one; the link exists before
// the child runs.
func (c *Context) SpawnLink(name string, b Behavior, opts ...SpawnOption) (Ref, error) {
	child, err := c.sys.spawn(name, b, c, opts)
	if err != nil {
		return Ref{}, err
	}
	c.linkChild(child)
	return child.start(), nil
}

// linkChild links this actor and child, which has not started yet.
func (c *Context) linkChild(child *Context) {
	e := c.extra()
	if e.links == nil {
		e.links = make(map[Ref]struct{})
	}
	e.links[child.Self()] = struct{}{}
	child.ext = &ext{links: map[Ref]struct{}{c.Self(): {}}}
}

// genRef returns the Ref (as text) of a new generated name in slot (see
// gentable.go): '$', a number and the slot in base 36, made in one
// allocation with the peer. The numbers of a system start at a random point of a 2^48 range, so a peer
// that restarts (a new system, a new incarnation) does not hand the names
// of its former actors to new ones: a Ref to an unnamed actor of an
// earlier incarnation reaches no actor (a dead letter; an Ask fails with
// ErrNoSuchActor) rather than an unrelated one, as a pid of an earlier
// Erlang node creation does. A name chosen by the application is the
// service's, as an Erlang registered name is: it finds the new actor.
func (s *System) genRef(slot uint32) string {
	var buf [112]byte
	b := append(append(buf[:0], s.peer...), '/', '$')
	b = append(strconv.AppendUint(b, s.nameSeq.Add(1), 36), '.')
	return string(strconv.AppendUint(b, uint64(slot), 36))
}

// randomNameBase returns where a system's generated names start: at random
// below 2^48, leaving the numbers above for it to count up through.
func randomNameBase() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:6]) // never fails (crypto/rand)
	return binary.LittleEndian.Uint64(b[:])
}

// spawnOptions applies opts (apart, so that a Spawn without options does
// not move its config to the heap).
func spawnOptions(opts []SpawnOption) spawnConfig {
	var sc spawnConfig
	for _, o := range opts {
		o(&sc)
	}
	return sc
}

func (s *System) spawn(name string, b Behavior, parent *Context, opts []SpawnOption) (*Context, error) {
	if b == nil {
		return nil, ErrNilBehavior
	}
	return s.spawnActor(name, b, nil, parent, opts)
}

// spawnActor registers a new actor: an event actor running b, or, when
// th is not nil, the thread-style actor th (see thread.go).
func (s *System) spawnActor(name string, b Behavior, th *Thread, parent *Context, opts []SpawnOption) (*Context, error) {
	if s.closing.Load() {
		return nil, ErrClosed
	}
	var sc spawnConfig
	if len(opts) > 0 {
		sc = spawnOptions(opts)
	}
	var ref string
	if name == "" {
		ref = s.genRef(s.names.gen.take())
		name = ref[len(s.peer)+1:]
	} else if err := checkName(name, sc.system); err != nil {
		return nil, err
	} else if _, gen := genSlot(name); gen {
		return nil, fmt.Errorf("%w: %q has the form of a generated name", ErrInvalidName, name)
	} else {
		ref = s.peer + "/" + name
	}
	c := &Context{sys: s, ref: ref, opts: sc.opts}
	if sc.limit > 0 {
		c.acct.Store(&mailboxAcct{limit: int32(sc.limit)})
	}
	if sc.colocate && parent != nil {
		c.loop.Store(parent.loop.Load())
	} else {
		c.loop.Store(s.group.Next())
	}
	if th != nil {
		// Its loop only runs its ReceiveWithin timers; its task is
		// never queued (wake signals the thread instead).
		c.opts |= oThread
		th.Context = c
		c.task.Init((*threadWake)(th))
	} else {
		c.cont = startCase{b}
		c.task.Init((*activation)(c))
	}
	c.state.Store(scheduled) // the first activation, or the thread, runs the behavior
	if !s.names.add(c) {
		return nil, fmt.Errorf("%w: %q", ErrNameTaken, name)
	}
	if th == nil {
		s.residents[c.loop.Load().Index()].n.Add(1)
	}
	s.live.Add(1)
	s.namesChanged(name)
	return c, nil
}

// start queues the first activation and returns the actor's Ref.
func (c *Context) start() Ref {
	ref := c.Self()
	if c.loop.Load().Submit(&c.task) != nil {
		c.terminate(ErrClosed)
	}
	return ref
}
