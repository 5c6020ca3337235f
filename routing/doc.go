// Package routing carries actor messages between peers over libp2p: it is
// the transport.Remote of a peer (Router), built on the system's
// transport.Port in the factory given to transport.NewSystem (see package
// actor/transport). Group messages go on GossipSub, in package
// routing/groups (the peer's transport.GroupTransport), which imports
// this one, never the other way.
//
// Towards each peer there is one long-lived stream per protocol: user
// messages on /troupe/msg/1.1.0, control traffic (links, monitors, exit
// signals, Down, Undeliverable) on /troupe/ctl/1.1.0, so that large user
// messages never delay a Down. Each is written by one goroutine draining
// a bounded queue; every stream starts with a hello carrying the sender's
// incarnation (a restarted peer is a new node). Per sender and receiver,
// messages of one kind keep their order; delivery is at most once. A
// message that cannot go (a full queue, no stream after three attempts, a
// broken stream) goes back to the actor system (Port.Bounce): an Ask
// fails, a monitor fires as Down with ErrNodeDown. A stream that breaks
// while its connection lives is declared lost in band, so that a message
// is lost only with a Down for its node, as in Erlang. Large messages go
// in fragments between the others. Inbound, each stream has one reader;
// bad input is counted and costs only its stream; each peer has a byte
// budget (budget.go), and a peer that asks and does not read the replies
// has its user stream left unread while our link to it takes no bytes
// (replypause.go).
//
// docs/routing.md has the whole design: streams and versions, large
// messages, failures, the loss protocol as a table, and the locks.
//
// # Locks
//
// router.go has the lock hierarchy. In short: Router.mu is the one root,
// and code holding it calls neither into the actor system nor into a
// writer's work; the queues' and links' own mutexes are leaves. A
// writer's fields have no lock: they belong to the holder of its queue's
// writing right (linkstate.go), a pure state that changes hands under the
// queue's lock: the writer goroutine, or a caller writing through while
// the writer sleeps. A writer collects what it has for the router and
// the actor system and performs it between rounds (effects.go). What may
// block a writer: its stream's writes (writeTimeout without progress),
// closing or resetting its stream (a yamux close or reset waits for room
// in the session's send queue), its dials and hasDirect's ConnsToPeer.
//
// # Files
//
// In the order a reader can take them: from what the actor system and
// the network call (going out, coming in, peers coming and going) down
// to the state they share (the Router, a link, the peer table) and the
// leaves. Most uses of one file's names by another go down this list;
// those that run back up (a link's code reading the Router's fields, a
// reader's helpers reaching into inbound, names declared where they were
// first needed) are the inner order's known debts (issue 31).
//
//	activity.go          PeerActivity: what the router has to do with a peer
//	traffic.go           per-peer counters
//
//	deliver.go           the actor system's Remote: messages going out
//	send.go              a writer's batch on its stream: deadlines, write-through
//	relaymove.go         moving a link off a relayed connection
//	writer.go            a writer goroutine: its rounds, streams, the driver of its dials
//	effects.go           what a writer does between rounds
//	plan.go              the batch planner: frames, fragments, refusals (pure)
//
//	inbound.go           reading a stream, handing messages to actors
//	inbound_limits.go    what bounds one stream's reader
//	dispatch.go          what a decoded message becomes
//	large.go             large messages in fragments, both ways; reassembly's step (pure)
//	budget.go            per-peer inbound byte budgets
//	reader_budget.go     the bytes all stream readers together may hold
//	replypause.go        pausing a peer that asks and does not read the replies (pure)
//	replypause_driver.go the readers' side of it, and the peer's notices
//
//	peers.go             peers coming and going; links retired
//	loss.go              the loss protocol: the router's side, the table's actions
//
//	router.go            Router, Config, New, Close, Stats; the lock hierarchy
//	options.go           the options of New
//	timings.go           waits and test hooks, per router
//	loglimit.go          what a hostile peer's protocol errors cost in logs
//	link.go              a peer's link: two queues and their writers
//	queue.go             a link's bounded queue
//	linkstate.go         a queue's writing right, a writer's next move (pure)
//	dialstate.go         a writer's dial: attempts, waits, giving up (pure)
//	queue_handoff.go     the queue's side of the right's hand-off (handBack, takeBack)
//	rooms.go             what share of a queue each kind may fill (pure)
//	peertable.go         the state per peer and its streams: events in, actions out (pure)
//	peertable_retire.go  the links to retire, and when (pure)
//
//	incarnation.go       incarnation numbers and the agent version announcing them
//	wire.go              system messages on the wire
//	errors.go            sentinel errors
//	same_*.go            string identity (unsafe / nounsafe builds)
//
// The group service (GossipSub topics and presence) is package
// routing/groups.
package routing
