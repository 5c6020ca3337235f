// Package actor is Troupe's actor runtime: event-based actors, after Haller
// and Odersky's Scala actors, running on Netty-style event loops
// (package eventloop).
//
// # Behaviors and continuations
//
// An actor runs a Behavior: a function of its *Context that ends by
// installing a continuation with Receive (to wait for a message) or by
// returning without one (the actor then stops normally).
//
// A continuation is a value. Each state of an actor is a set of cases
// built once with Cases; a handler installs the next state (the same one
// or another) with Receive, and takes what it needs of the message from
// its argument and the Context (Sender, Reply), the actor's state from the
// actor's own variables:
//
//	type counter struct {
//		v                int
//		counting, locked actor.Case
//	}
//
//	func newCounter(c *actor.Context) {
//		k := &counter{}
//		k.counting = actor.Cases(
//			actor.On(func(Incr) { k.v++; c.Receive(k.counting) }),
//			actor.On(func(m Value) { c.Send(m.To, k.v); c.Receive(k.counting) }),
//			actor.On(func(m Lock) { c.Send(m.To, k.v); c.Receive(k.locked) }),
//		)
//		k.locked = actor.Cases(actor.On(func(u Unlock) { k.v = u.V; c.Receive(k.counting) }))
//		c.Receive(k.counting)
//	}
//
// Installing a prebuilt set allocates nothing: such an actor costs no
// allocation per message. The paper's literal style, state in the
// arguments and fresh closures per Receive, works the same:
//
//	func counter(c *actor.Context, v int) {
//		c.Receive(
//			actor.On(func(Incr) { counter(c, v+1) }),
//			actor.On(func(m Value) { c.Send(m.To, v); counter(c, v) }),
//		)
//	}
//
// but each closure is an allocation per message (they escape), and their
// garbage brings collections: two to three times the CPU per message of
// the prebuilt set with many messages in flight (docs/benchmarks.md). Loop
// keeps a set installed until a handler installs something else, also
// without allocations.
//
// Receive never blocks and never runs a handler: it installs the cases and
// returns. When the current step returns, the actor's activation (a
// trampoline on its loop, never a recursion) looks for the first saved
// message some case accepts, runs it, and repeats; when nothing matches, the
// actor waits holding no goroutine: an idle actor is a small struct, its
// saved messages and its continuation. Code after Receive runs at once, so
// Receive should be the last statement of its step.
//
// A new message is tested only against the current continuation; messages
// no case accepts are kept, in order, for later receives (selective
// receive, and nested receive: the locked state above accepts only Unlock,
// and the messages sent meanwhile wait for the counting state).
//
// # Threads and events
//
// An actor that must block (reading a file, a socket or a terminal,
// calling a database driver) runs thread-style, as in Haller and
// Odersky's "Actors that unify threads and events": System.SpawnThread
// (Context.SpawnThread, SpawnLinkThread, ChildSpec.Thread) runs its
// ThreadBehavior on a goroutine of its own, where Thread.Receive blocks
// until a message some case accepts arrives, runs that case and returns:
//
//	s.SpawnThread("prompt", func(t *actor.Thread) {
//		in := bufio.NewScanner(os.Stdin)
//		for in.Scan() { // blocks the thread, never a loop
//			reply, err := t.Ask(room, Say{in.Text()}, time.Second)
//			...
//		}
//	})
//
// It is the same actor otherwise: one mailbox with the same selective
// receive (saved messages in order, guards tested once per new message),
// ReceiveWithin and Timeout, nested receives (a plain call here), Ask
// (blocking), Reply and Sender, links, monitors, exit signals, TrapExit,
// names and Whereis, supervision, and Refs that other peers reach. A
// panic stops it with a *PanicError. Code written in continuation style
// (Receive the last statement of its step) runs the same in both modes,
// but on a thread each such Receive is a nested call, a frame more per
// message: a thread loops with for instead, which keeps its stack flat
// (receives nested more than 16384 deep stop it with ErrBadReceive).
//
// A stopped thread (an exit signal, a kill, Stop or Exit, Shutdown)
// unwinds from Receive with runtime.Goexit, running its deferred calls
// before its links and monitors hear of its exit. A thread blocked in a
// call of its own sees such a signal only when that call returns and it
// calls Receive (or returns): close what it reads to stop it promptly;
// Shutdown, and a supervisor stopping its children, wait for it until
// then.
//
// A thread costs its goroutine: about 3 KiB parked in a shallow Receive,
// where an idle event actor takes about 260 bytes (docs/benchmarks.md).
// An event actor pays nothing for threads but one test of a spawn option
// when a sender wakes it.
//
// # Garbage collection
//
// An actor program's live heap is often small, and Go's collector then
// runs every 4 MiB allocated. A System started with default options sets
// a GC heap floor of 32 MiB (WithGCHeapFloor; 0 turns it off) unless the
// process set GOGC or GOMEMLIMIT: the GC percent is raised while the live
// heap is below the floor, and given back when the last system shuts
// down. System.GCHeapFloor says what is in force.
//
// # Messages
//
// Per sender and receiver, messages arrive in the order sent; so do
// signals (links, exits, monitors, Down) and replies, all through the one
// inbox of the receiver. Across peers the transport splits them in two
// classes, each in order per sender and receiver: user messages and
// replies, and control signals (with Undeliverable); a signal may
// overtake a user message sent before it to an actor of another peer
// (docs/architecture.md, "What is ordered", states the guarantee).
// Plain code counts as one sender per goroutine. An actor's sends to its
// own peer are pushed in runs, per partner, by the end of its activation
// at the latest: code outside the actor system that a handler tells about
// a send may look before it is in the target's mailbox. Delivery is
// at-most-once; sending never blocks. A message for an unknown or stopped
// actor, or for another peer when the system has no transport, is a dead letter:
// counted (System.DeadLetters), passed to the dead-letter hook, never a
// crash. Ask is request-reply with a correlation ID and a timeout, in
// continuation style inside an actor (Context.Ask) and blocking from plain
// Go code (System.Ask, which refuses to run on an event loop).
//
// # Failures
//
// A panic in a behavior stops that actor with a *PanicError (value and
// stack); its loop lives on. Links and monitors follow Erlang: Monitor gives
// a Down message; an abnormal exit travels along links and stops the linked
// actors unless they trap exits, in which case it arrives as an Exit
// message. Supervisor restarts children one-for-one or one-for-all within a
// restart intensity.
//
// # Names and Refs
//
// An actor is addressed by a Ref: its peer's ID plus its name, in text
// "<peer>/<name>". A Ref is a comparable value, not a handle: making one
// checks only its syntax, and holding one keeps nothing alive. Names are
// unique per peer; actors spawned without one get a generated name
// starting with '$', never handed out again by that peer
// even after it restarts (a new System counts from a random point), so a
// Ref to an unnamed actor of a restarted peer reaches no actor, as a pid of
// an earlier Erlang node creation does. A name the application chose
// belongs to the service, as an Erlang registered name does: after a
// restart it reaches the new actor of that name. A Ref field of a message
// to another peer travels as the bytes of its address (MarshalBinary) and
// is checked on arrival like any address.
//
// # Concurrency
//
// System methods are safe for concurrent use. Context methods must be
// called from the actor's own behavior and handlers, on its loop (a
// thread-style actor's: on its goroutine). An
// actor starts on a loop chosen round-robin (or its parent's, with
// Colocated) and may move between activations, never during one: to the
// loop of an actor that woke it, or of the actor it mostly sends to, when
// that loop is no busier (placement.go). Order, selective receive,
// timers and links do not depend on the loop. The
// network is reached through a transport (package actor/transport's
// Remote, which package routing implements); this package knows nothing of
// libp2p.
//
// # Transports
//
// What only a transport needs lives in package actor/transport: its
// NewSystem starts a system and builds the system's transport from the
// system's Port (through which messages and news from other peers come
// in), in one step; the types the transport carries (Envelope, Outbound,
// Inbound, Credit, the Signal types, Undeliverable) and implements
// (Remote, BatchRemote, DirectRemote, GroupTransport) are there, and so
// are the options only a system with a transport needs (and SystemName,
// the Port's RemoteEdges, RemoteWatches and Loops for an embedder).
// Applications need none of it: package peer wires routing to a system.
// A System made with New reaches no other peer.
//
// # Files
//
//	system.go      System, New, Whereis, Shutdown, counters
//	spawn.go       spawning and its options
//	deliver.go     sending, nodes, dead letters; deadletters.go: their log
//	context.go     Context: a behavior's view of its actor, Receive
//	context_send.go  an actor's sends, their runs, outbox, Reply and Respond
//	case.go        Receive's cases (On, OnWhen, Any, Timeout, Cases)
//	gcfloor.go     the GC heap floor (WithGCHeapFloor)
//	activation.go  the trampoline that runs an actor on its loop
//	thread.go      thread-style actors: SpawnThread, Thread, a blocking Receive
//	placement.go   which loop an actor runs on, and when it moves
//	mailbox.go     inbox and saved messages; nodeblock.go: remote nodes
//	lanes.go       other peers' messages in turn, one lane per sender peer
//	ask.go         Ask and replies; typed.go: AskAs, AskThen
//	replies.go     the reply table where a System.Ask waits
//	signal.go      links, monitors, exits, Down
//	supervisor.go  Supervisor
//	group.go       the group table (its API: package actor/group)
//	port.go        the transport's handle; remote.go: what it carries
//	spi.go         the hooks package transport calls (internal/spi)
//	inbound.go     batches of remote messages; credit.go: their bytes
//	peerdown.go    what a departed peer's actors leave behind
//	remotepeers.go RemoteEdges: what ties the actors to a peer
//	registry.go    names; ref.go: Ref; gentable.go: generated names
//	options.go     System options; errors.go: sentinels
//	same_*.go, owner_*.go  identity checks (unsafe / nounsafe builds)
package actor
