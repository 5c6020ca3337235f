package actor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-mesh/troupe/actor/eventloop"
)

// System hosts actors on a group of event loops. All its methods are safe
// for concurrent use.
type System struct {
	cfg   config
	peer  string
	group *eventloop.Group
	port  Port // its transport handle: port.s is the system

	names  *registry
	batch  BatchRemote  // cfg.remote when it takes runs of messages, else nil
	direct DirectRemote // cfg.remote when it can write on the caller's goroutine, else nil
	remote remoteIndex  // monitors and links across peers
	groups groupTable
	// residents counts the actors whose activations run on each loop.
	residents []residents
	nodes     sync.Pool // *node, recycled once handled
	blocks    sync.Pool // *nodeBlock, for Inbounds

	ids         atomic.Uint64 // monitor IDs (not correlation IDs: newCorr)
	nameSeq     atomic.Uint64 // generated names; starts at random (see genName)
	live        atomic.Int64
	deadLetters atomic.Uint64
	mailboxFull atomic.Uint64

	closing  atomic.Bool
	drained  chan struct{}
	drainOne sync.Once
}

// New starts a system.
func New(opts ...Option) (*System, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &System{cfg: cfg, peer: cfg.peer, names: newRegistry(), drained: make(chan struct{})}
	s.port.s = s
	s.nameSeq.Store(randomNameBase())
	s.batch, _ = cfg.remote.(BatchRemote)
	s.direct, _ = cfg.remote.(DirectRemote)
	g, err := eventloop.New(
		eventloop.WithLoops(cfg.loops),
		eventloop.WithWatchdog(cfg.watchdog),
		eventloop.WithSpin(cfg.spin),
		eventloop.WithLogger(cfg.logger),
	)
	if err != nil {
		return nil, fmt.Errorf("actor: %w", err)
	}
	s.group = g
	s.residents = make([]residents, g.Len())
	return s, nil
}

// Peer returns the ID of the peer this system is.
func (s *System) Peer() string { return s.peer }

// Group returns the system's event loops.
func (s *System) Group() *eventloop.Group { return s.group }

// SpawnOption configures one Spawn.
type SpawnOption func(*spawnConfig)

type spawnConfig struct {
	colocate bool
	system   bool
	opts     uint8 // Context.opts
	limit    int   // mailbox limit; 0: none
}

// SystemName lets the spawn use a name starting with '$', which is reserved
// for generated names and for Troupe's own actors (such as a peer's "$node").
// Applications should not need it.
func SystemName() SpawnOption { return func(c *spawnConfig) { c.system = true } }

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
	e := c.extra()
	if e.links == nil {
		e.links = make(map[Ref]struct{})
	}
	ref := child.Self()
	e.links[ref] = struct{}{}
	child.ext = &ext{links: map[Ref]struct{}{c.Self(): {}}}
	return child.start(), nil
}

// genName returns a new generated name: '$' and a number in base 36. The
// numbers of a system start at a random point of a 2^48 range, so a peer
// that restarts (a new system, a new incarnation) does not hand the names
// of its former actors to new ones: a Ref to an unnamed actor of an
// earlier incarnation reaches no actor (a dead letter; an Ask fails with
// ErrNoSuchActor) rather than an unrelated one, as a pid of an earlier
// Erlang node creation does. A name chosen by the application is the
// service's, as an Erlang registered name is: it finds the new actor.
func (s *System) genName() string {
	var buf [16]byte
	return string(strconv.AppendUint(append(buf[:0], '$'), s.nameSeq.Add(1), 36))
}

// randomNameBase returns where a system's generated names start: at random
// below 2^48, leaving the numbers above for it to count up through.
func randomNameBase() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:6]) // never fails (crypto/rand)
	return binary.LittleEndian.Uint64(b[:])
}

func (s *System) spawn(name string, b Behavior, parent *Context, opts []SpawnOption) (*Context, error) {
	if b == nil {
		return nil, ErrNilBehavior
	}
	if s.closing.Load() {
		return nil, ErrClosed
	}
	var sc spawnConfig
	for _, o := range opts {
		o(&sc)
	}
	if name == "" {
		name = s.genName()
	} else if err := checkName(name, sc.system); err != nil {
		return nil, err
	}
	c := &Context{sys: s, name: name, cont: startCase{b}, opts: sc.opts}
	if sc.limit > 0 {
		c.acct.Store(&mailboxAcct{limit: int32(sc.limit)})
	}
	if sc.colocate && parent != nil {
		c.loop.Store(parent.loop.Load())
	} else {
		c.loop.Store(s.group.Next())
	}
	c.task.Init((*activation)(c))
	c.state.Store(scheduled) // the first activation runs the behavior
	if !s.names.add(c) {
		return nil, fmt.Errorf("%w: %q", ErrNameTaken, name)
	}
	s.residents[c.loop.Load().Index()].n.Add(1)
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

// AcceptsUnknownTypes reports whether a message of a type this node does
// not know, from another peer, may go to the local actor to: only when it
// was spawned with AcceptUnknownTypes (a missing actor does not: one
// spawned under its name before the message is handed over may not take
// them). For transports. Safe for concurrent use.
func (p *Port) AcceptsUnknownTypes(to Ref) bool {
	s := p.s
	c := s.names.load(to.name)
	return c != nil && c.opts&oAcceptUnknown != 0
}

// Whereis returns the Ref of the local actor registered as name.
func (s *System) Whereis(name string) (Ref, bool) {
	if s.names.load(name) == nil {
		return Ref{}, false
	}
	return Ref{peer: s.peer, name: name}, true
}

// Actors returns how many actors live on this system.
func (s *System) Actors() int { return int(s.live.Load()) }

// MailboxOverflows returns how many messages were dead letters with
// ErrMailboxFull so far (see WithMailboxLimit and WithRemoteBacklog).
func (s *System) MailboxOverflows() uint64 { return s.mailboxFull.Load() }

// DeadLetters returns how many messages reached no actor so far.
func (s *System) DeadLetters() uint64 { return s.deadLetters.Load() }

// Send sends msg to the actor to from plain Go code (the message has no
// sender). It never blocks.
func (s *System) Send(to Ref, msg any) { s.send(to, Ref{}, msg, 0, kindUser) }

// The node pool holds runs of free nodes linked through next: an
// activation gives back all the nodes it handled at once. Remote messages
// take their nodes from blocks instead (nodeblock.go).

func (s *System) newNode(msg any, from Ref, corr uint64, kind uint8) *node {
	n, _ := s.nodes.Get().(*node)
	if n == nil {
		n = new(node)
	} else if n.next != nil {
		s.nodes.Put(n.next)
		n.next = nil
	}
	n.msg, n.from, n.corr, n.kind = msg, from, corr, kind
	return n
}

// free recycles a node that nothing refers to any more.
func (s *System) free(n *node) {
	if c := n.charged(); c != nil {
		c.release(int64(n.size))
	}
	if b := n.block(); b != nil {
		n.msg, n.acct, n.size = nil, 0, 0
		s.releaseBlockNodes(b, 1)
		return
	}
	*n = node{}
	s.nodes.Put(n)
}

// Deliver hands a message that arrived from another peer to its local
// actor. Remotes call it; a message for an unknown actor becomes a dead
// letter (and fails its Ask).
func (p *Port) Deliver(e Envelope) {
	s := p.s
	s.deliverLocal(e.To, s.newNode(e.Msg, e.From, e.Corr, e.kind()))
}

// namesChanged calls the WithNamesChanged hook when name is public.
func (s *System) namesChanged(name string) {
	if s.cfg.names != nil && name[0] != '$' {
		s.cfg.names()
	}
}

// kind is the mailbox kind of the envelope's message.
func (e *Envelope) kind() uint8 {
	switch {
	case e.Reply:
		return kindReply
	case isSignal(e.Msg):
		return kindSignal
	}
	return kindUser
}

// DeliverBatch hands messages that arrived from another peer to their
// local actors, in order, as calling Deliver for each would: consecutive
// envelopes for the same actor are pushed onto its inbox with one atomic
// operation and wake it at most once. Remotes call it when they decoded
// several messages at once. es is not retained.
func (p *Port) DeliverBatch(es []Envelope) {
	s := p.s
	in := s.port.NewInbound()
	for i := range es {
		in.Add(&es[i])
	}
	in.Close()
}

func isSignal(m any) bool {
	_, ok := m.(Signal)
	return ok
}

// send routes a message: to a local actor's inbox, or to the Remote.
func (s *System) send(to, from Ref, msg any, corr uint64, kind uint8) {
	if to.peer == s.peer {
		s.deliverLocal(to, s.newNode(msg, from, corr, kind))
		return
	}
	var err error
	switch {
	case to.IsZero():
		err = ErrNoSuchActor
	case s.cfg.remote == nil:
		err = ErrNoRoute
	default:
		err = s.cfg.remote.Deliver(to, from, msg, corr, kind == kindReply)
	}
	if err != nil {
		s.undeliverable(to, s.newNode(msg, from, corr, kind), err)
	}
}

// Bounce hands back a message that an actor of this system (or plain code)
// sent to another peer, and that the Remote took but then could not
// deliver, for reason: an Ask request is answered with Undeliverable, a
// monitor request with Down and a link request with an exit signal (both
// with reason), as when the target does not exist; any other message
// becomes a dead letter. Remotes call it. Safe for concurrent use.
func (p *Port) Bounce(e Envelope, reason error) {
	s := p.s
	s.undeliverable(e.To, s.newNode(e.Msg, e.From, e.Corr, e.kind()), reason)
}

func (s *System) deliverLocal(to Ref, n *node) {
	if c := s.names.load(to.name); c != nil && c.push(n) {
		return
	}
	s.undeliverable(to, n, ErrNoSuchActor)
}

// undeliverable disposes of a message that reached no actor: user messages
// and replies become dead letters (an Ask request is answered with
// Undeliverable), a monitor or link request is answered as if the target
// had just died. It frees n.
func (s *System) undeliverable(to Ref, n *node, reason error) {
	defer s.free(n)
	switch n.kind {
	case kindTimeout:
	case kindSignal:
		switch sig := n.msg.(type) {
		case MonitorSignal:
			s.send(n.from, to, DownSignal{ID: sig.ID, Reason: reason}, 0, kindSignal)
		case LinkSignal:
			s.send(n.from, to, ExitSignal{Reason: reason, Linked: true}, 0, kindSignal)
		}
	default:
		s.deadLetter(DeadLetter{To: to, From: n.from, Msg: n.msg, Reason: reason})
		if n.kind == kindUser && n.corr != 0 && !n.from.IsZero() {
			s.send(n.from, to, Undeliverable{To: to, Reason: reason}, n.corr, kindReply)
		}
	}
}

// deadLetter counts d and hands it to the WithDeadLetterHook hook. A
// panic in the hook is logged and goes no further: its callers are
// freeing nodes and giving back credit, which must not stop half-way.
func (s *System) deadLetter(d DeadLetter) {
	s.deadLetters.Add(1)
	f := s.cfg.deadLetter
	if f == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			s.cfg.logger.Error("actor: dead-letter hook panicked", "panic", fmt.Sprint(v), "to", d.To.String())
		}
	}()
	f(d)
}

func (s *System) actorGone() {
	if s.live.Add(-1) == 0 && s.closing.Load() {
		s.drainOne.Do(func() { close(s.drained) })
	}
}

// InEventLoop reports whether the caller runs on one of the system's event
// loops, where a call that waits is refused with ErrBlockingCall rather than
// stall the loop. While a loop runs a task it costs about a microsecond.
func (s *System) InEventLoop() bool { return s.group.InLoop() }

// Shutdown stops the system: no new actors, every actor gets an untrappable
// exit signal with ErrShutdown (its monitors and links see that reason),
// then the event loops drain and stop. It returns when all is stopped or ctx
// ends (the error then wraps ctx.Err()). It must not be called from an
// actor.
func (s *System) Shutdown(ctx context.Context) error {
	if s.group.InLoop() {
		return ErrBlockingCall
	}
	s.closing.Store(true)
	for _, c := range s.names.all() {
		c.push(s.newNode(ExitSignal{Reason: ErrShutdown, Kill: true}, Ref{}, 0, kindSignal))
	}
	if s.live.Load() == 0 {
		s.drainOne.Do(func() { close(s.drained) })
	}
	select {
	case <-s.drained:
	case <-ctx.Done():
		s.group.Shutdown(ctx, 0)
		return fmt.Errorf("actor: shutdown with %d actors still running: %w", s.live.Load(), ctx.Err())
	}
	return s.group.Shutdown(ctx, 10*time.Millisecond)
}

// Names returns the registered names of the local actors that are not
// generated (their public names), sorted.
func (s *System) Names() []string {
	var out []string
	for _, c := range s.names.all() {
		if c.name[0] != '$' {
			out = append(out, c.name)
		}
	}
	slices.Sort(out)
	return out
}

// Groups returns the groups that have local members, sorted.
func (s *System) Groups() []string {
	s.groups.mu.RLock()
	out := make([]string, 0, len(s.groups.members))
	for g := range s.groups.members {
		out = append(out, g)
	}
	s.groups.mu.RUnlock()
	slices.Sort(out)
	return out
}
