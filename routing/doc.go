// Package routing carries actor messages between peers over libp2p: it is
// the actor.Remote of a peer.
//
// # Streams
//
// User messages travel on /troupe/msg/1.1.0 and control traffic (link,
// unlink, exit, monitor, demonitor, down, undeliverable) on
// /troupe/ctl/1.1.0, so that a burst of large user messages never delays a
// Down or an Exit. Towards each peer there is one long-lived stream per
// protocol, written by one goroutine that drains a bounded queue, encodes
// on its own goroutine (never on an event loop), writes through a batching
// codec.FrameWriter and flushes when the queue is empty. The first frame on
// every stream is a hello carrying the sender's incarnation, a random number
// drawn at each start: a peer seen with a new incarnation has restarted, and
// whatever watched its old actors fires (actor.Port.PeerDown). A peer also
// announces its incarnation in its identify agent version (AgentVersion,
// set by peer.New), so both ends learn each other's when a connection is
// set up, before any stream; a restarted peer that connects again while its
// old connection still looks alive is then known as a new node at once. A writer
// whose connection closed while it had nothing to write opens a new stream
// for its next batch, rather than losing the batch on the dead one. A
// request of actor.System.Ask (plain code that waits for the reply anyway)
// that finds the writer asleep with its stream open is written on the
// asker's goroutine (Router.DeliverDirect): a round trip then wakes one
// goroutine less.
//
// # Protocol versions
//
// Version 1.1.0 carries compact frames (see codec, "Compact streams"): an
// envelope that repeats the previous one's kind, target, sender and type is
// sent as a short envelope holding only its body and correlation ID. A
// 100-byte []byte message ("compare.Blob" from "source" to "sink") takes
// 112 bytes on the wire instead of 142. Version 1.0.0 carries full envelopes only.
// A router serves both, and its writers open streams offering 1.1.0 first
// and 1.0.0 second; libp2p negotiates the first one the remote peer
// supports, and the writer uses short envelopes only if that is 1.1.0. A
// reader accepts short envelopes only on 1.1.0 streams; on 1.0.0 they are
// garbage. So peers of the previous version still interoperate, each
// direction in the best format both ends know.
//
// # Large messages
//
// On 1.1.0 a user message whose body is longer than 56 KiB travels in
// fragments (system messages of type troupe.fragment),
// interleaved with the other messages of the stream, so that it does not
// hold up the messages of other actors behind it. The writer keeps one
// large message in fragments at a time and holds back, until its last
// fragment is written, the later messages of the same sender and receiver
// (and any other large message; when 1024 messages wait so, it writes the
// rest of the large message at once); the reader reassembles it, up to the
// maximum frame size, buffering no more than about twice what arrived of
// it, and resets a stream whose fragments do not add up or that ends
// inside a message.
//
// Per sender and receiver, messages of one kind keep their order. A user
// message and a control signal from the same sender use different streams
// and may overtake each other: a monitor set just before a message that
// makes the target exit may then see ErrNoSuchActor as the reason.
//
// # Failures
//
// A full queue refuses the message at once (ErrLinkFull; the actor system
// makes it a dead letter). A message that cannot be encoded or is larger
// than the maximum frame is refused at the sender (ErrTooLarge). When no
// stream can be opened after three attempts (100 and 200 ms apart), the
// messages in hand are given up (ErrUnreachable) and the writer keeps
// redialing for the ones behind it; libp2p's dial backoff keeps an
// address that failed from being dialed again for a few seconds. When a stream breaks, the messages the writer had taken
// and not yet flushed, some of which may have arrived, are given up
// (ErrStreamBroken) and the next batch opens a new stream. A message given
// up goes back to the actor system (actor.Port.Bounce), as one to an
// actor that does not exist: an Ask fails at once, a monitor fires as Down
// and a link as an exit signal (as Erlang's do with noconnection), other
// messages become dead letters; each once. A monitor or link request given
// up with its broken stream may have arrived: a demonitor or unlink follows
// it on the next stream, so that the peer keeps none either. Disconnection of a peer
// (EvtPeerConnectednessChanged) turns into PeerDown, and retires the link
// to it once the link is idle (nothing queued or in hand, no stream on a
// live connection; tried again after 1, 5 and 30 s while its writers give
// up what they held). So does a link that gave messages up as unreachable
// while its peer is not connected (one made by a message sent after the
// peer left): a long-lived peer keeps no goroutines or buffers for the
// peers it once talked to. The next message to that peer makes a new
// link; a sender that raced the retirement finds the old link retired and
// takes the new one, so nothing is lost to it.
//
// A stream that breaks while its connection lives loses what its reader
// had not read, and no disconnection says so. The node that gave it up
// declares the loss in band: a writer whose own write failed (its 30 s
// deadline: the peer stopped reading), or a reader that reset a stream it
// could not read, which asks the writer to. Declaring runs PeerDown here
// and sends a declaration on the control stream, where the peer runs
// PeerDown for this node at that point of the stream; the writer's next
// user stream hands nothing on before that. So, as in Erlang, a message
// is lost only with a Down for its sender's node, and no message sent
// after it arrives before that Down (Stats.LossesDeclared, LossesHeard;
// see loss.go for the limits). An Ask's own deadline passing while its
// request is written through does not break the stream: the writer writes
// the rest.
//
// Incoming streams are read by one goroutine each, which decodes the frames
// and hands the messages to the local actors' inboxes. A valid envelope
// whose message does not decode (an unknown type, a body of another shape,
// a user message that claims a system message's type) is counted and
// skipped: the peer may run another version of the program. Garbage is
// counted and resets the stream: a malformed envelope (no troupe writer
// sends one), a fragment on a control stream, or a stream that lost sync
// (bad length prefix, oversize or truncated frame). Peers may differ in
// their maximum frame: a message over the reader's own maximum from a
// peer whose maximum is larger (in one frame of up to 64 KiB, or in
// fragments) is refused by itself and counted (Stats.TooLargeIn): an Ask
// whose request or reply it was fails at once with ErrTooLarge, another
// message becomes a dead letter, and the stream goes on. A larger frame
// (a control message, which is never fragmented; or any on 1.0.0)
// resets its stream as garbage does; signals always go through. A peer may keep at
// most four inbound streams of each protocol (user, control) open at once;
// more are reset. Only a stream's first hello counts. A writer opens a
// stream only after it gave up its last one (it broke, or its connection
// went away), whose reader may still be handing on what it had read: the
// new stream's hello (which numbers the writer's streams) ends the peer's
// older streams of its protocol and waits for their readers, and a stream
// older than one being read hands nothing on, so nothing sent on a stream
// a writer gave up arrives after what it sends on the next. Signals carry
// at most 4 KiB of an error's text. A monitor or link
// request from no actor is refused, and so are exit signals and links
// aimed at the actors of Config.Protected (a peer's "$node"). The remote
// peer ID of a message is always the one the connection authenticated.
//
// # Locks
//
// Outer first: a writer's mu (held while it writes a batch, across
// NewStream, dial backoff and the declaration of a loss) → Router.mu →
// the leaves: outQueue.mu, link.mu, and the actor system's own locks. A
// lock is never taken while holding one to its right. The one exception
// is Router.retire, which holds Router.mu and takes the writers' mu with
// TryLock only (a writer at work means the link is busy: retire gives
// up). Groups.mu, TopicFilter.mu and the presence order's mu are leaves
// of their own, never held with Router.mu. Known debt: a writer calls
// into the router (declareLoss, pushLoss) and the actor system (Bounce)
// with its mu held, and NewStream can take 10 s under it; a writer
// goroutine owning its state without a lock would remove both.
package routing
