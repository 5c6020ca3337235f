package routing

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// Locks. These are all the mutexes of a Router and what each guards.
// One root over the leaves:
//
//	Router.mu → outQueue.mu, link.mu
//
// Code holding Router.mu calls neither into the actor system nor into a
// writer's work. A writer's fields have no mutex: they belong to the
// holder of its queue's writing right (linkstate.go), a state under
// outQueue.mu that changes hands there.
//
//   - The writing right (outQueue.right), one per queue of a link: the
//     writer's fields (its stream, FrameWriter, planner, batch in hand,
//     large message, cancellations, effects). Held by the writer
//     goroutine but while it sleeps with nothing in hand, through its
//     dials (NewStream, up to 10 s, and the backoff) and a stream's end
//     (finish, up to writeTimeout); taken from a sleeping writer by a
//     caller writing through (pushClaim) and handed back (handBack),
//     which a writer woken meanwhile waits for. Its holder writes
//     taking no lock but the leaves; the calls into the router
//     (Router.mu) and the actor system it collected (writer.later,
//     effects.go) it makes holding no lock, the writer goroutine with
//     its right, a caller once it handed it back. Nobody waits for the
//     right holding a lock: only the writer does (takeBack), holding
//     none, so the right is in no lock cycle. What may block while it
//     is held: the stream's writes (writeTimeout without progress, or a
//     caller's deadline), its Close and Reset (a yamux close or reset
//     waits for room in the session's send queue), hasDirect's
//     ConnsToPeer, and the writer's dials and its stream's end.
//   - Router.mu: the fields of Router after it up to lossCh (links,
//     budgets, the peer table: incarnations, connections, losses,
//     inbound streams and links to retire per peer; closed). The peer
//     table is pure: the router does the bookkeeping actions it returns
//     under Router.mu, and the others after unlocking. Under it: the
//     leaves and libp2p's IsClosed and resource scopes; never a writer's
//     work (link.retire reads what the writers published in their queues).
//   - outQueue.mu (queue.go): a queue's messages, its writing right and
//     what its writer published for retire (idle, idleOn). link.mu: the
//     link's open streams, and when its writers last cleared libp2p's
//     dial backoff of the peer. Leaves: they take no other lock (under a
//     queue's: libp2p's IsClosed and the actor system's lock-free
//     InEventLoop).
//   - readerBudget.mu (reader_budget.go): what all stream readers hold;
//     logLimiter.mu (loglimit.go): the log lines per peer and kind;
//     peerPause.mu (replypause_driver.go): a peer's reply pause.
//     Leaves too: they take no other lock, and may be taken under any
//     of the above.
//
// The router calls the actor system (Bounce, PeerDown, its Inbound) with
// none of these held, so the actor system may call the router with its
// own locks held. (The group service, package routing/groups, has
// locks of its own, never held with these.)

// Protocols: user messages, and control traffic on its own stream so that
// a burst of large user messages never delays a Down or an Exit. Version
// 1.1.0 carries compact frames (codec.WithCompact); 1.0.0, which peers of
// earlier versions speak, the same frames without short envelopes. A
// router serves both and opens streams offering 1.1.0 first.
const (
	ProtoMsg   protocol.ID = "/troupe/msg/1.1.0"
	ProtoCtl   protocol.ID = "/troupe/ctl/1.1.0"
	ProtoMsg10 protocol.ID = "/troupe/msg/1.0.0"
	ProtoCtl10 protocol.ID = "/troupe/ctl/1.0.0"
)

// protocols lists every protocol a router serves.
var protocols = [...]protocol.ID{ProtoMsg, ProtoCtl, ProtoMsg10, ProtoCtl10}

// isCompact reports whether streams of protocol p carry compact frames.
func isCompact(p protocol.ID) bool { return p == ProtoMsg || p == ProtoCtl }

// isCtl reports whether p is a control protocol (any version).
func isCtl(p protocol.ID) bool { return p == ProtoCtl || p == ProtoCtl10 }

// config is a Router's configuration: New's arguments and options
// (options.go).
type config struct {
	Host        host.Host
	Registry    *codec.Registry
	Port        *transport.Port // the actor system's
	Logger      *slog.Logger
	MaxFrame    int
	LinkQueue   int
	Protected   []string
	Incarnation uint64
	PeerBudget  int64
	PauseGrace  time.Duration

	timings timings // tests only: shorter waits (zero: the defaults)
	// readerMemory and readerFloor are tests' node-wide reader budget and
	// per-peer floor (zero: DefaultReaderMemory, MaxFrame).
	readerMemory, readerFloor int64
	// readerPerAddr and readerStreams are tests' per-address and stream
	// count bounds (zero: the defaults); readerLoopback bounds loopback
	// addresses per address too.
	readerPerAddr  int64
	readerStreams  int
	readerLoopback bool
}

// Stats are the router's counters.
type Stats struct {
	Sent, Received   uint64 // messages sent; received and handed on: to their actors, or a stream's hello to the router (a large message in fragments counts once)
	LinkFull         uint64 // messages dropped because a link queue was full (for their kind: rooms.go)
	RepliesRefused   uint64 // replies not sent (a full queue, or refused by the writer) whose asker was sent an Undeliverable instead
	TooLarge         uint64 // messages refused at the sender
	TooLargeIn       uint64 // messages refused at the receiver: over its maximum frame, from a sender whose maximum is larger
	DecodeErrors     uint64 // frames that could not be decoded
	StreamsReset     uint64 // inbound streams reset for bad input, a stall, or a memory limit
	SlowStreams      uint64 // of those, streams whose frame or large message came slower than its deadline allows (trickled)
	Undeliverable    uint64 // messages lost when a stream failed
	PeersDown        uint64 // peer disconnections and restarts seen
	EncodeErrors     uint64 // messages whose body could not be encoded
	QueuedUser       int    // messages now waiting in user queues
	QueuedCtl        int    // messages now waiting in control queues
	ConnectedLinks   int    // peers with an outbound link
	RemoteIncarnated uint64 // incarnations heard: hellos received, and identify announcements
	WrittenThrough   uint64 // messages written on an asker's goroutine (DeliverDirect)
	LossesDeclared   uint64 // streams given up here while their connection lived, what they carried perhaps lost: each took the peer down on both sides
	LossesHeard      uint64 // the same, declared by peers and acted on here
	Refused          uint64 // system messages a peer may not send: a kill, an exit or link to a protected actor
	UnknownTypes     uint64 // user messages of a type unknown here, to an actor that does not take them: dead letters
	ReaderPanics     uint64 // inbound streams whose reader panicked (a bug): each was reset, the node lived on
	Paused           uint64 // times a peer's stream reader paused, the peer at its budget (see WithPeerBudget)
	Shed             uint64 // times a peer stayed paused for WithPauseGrace and its actors' saved messages were shed
	ReplyPaused      uint64 // times a peer's user stream was left unread while it asked and our link to it took no bytes (replypause.go)
	ReplyPausesHeard uint64 // notices of peers that they paused this node's user stream, believed
	MovedOffRelay    uint64 // outbound streams ended cleanly on a relayed connection once a direct one came (relaymove.go)
	ReaderBytes      int64  // bytes inbound stream readers now hold for unfinished frames and large messages, node-wide (at most DefaultReaderMemory beyond a maximum frame per peer)
	ReaderPeers      int    // peers whose readers now hold some
	ReaderAddrs      int    // source addresses whose peers' readers now hold some (at most DefaultReaderPerAddress each)
	ReaderStreams    int    // inbound streams whose readers now hold some (at most DefaultReaderStreams beyond one per peer)
	ReaderRefused    uint64 // reservations the node-wide, per-address or stream-count bound refused: each reset its stream
}

// Router carries actor messages between peers over libp2p streams: one
// long-lived outbound stream per peer and protocol, written by one goroutine
// that drains a bounded queue and flushes when it is empty. It implements
// transport.Remote. Methods are safe for concurrent use.
type Router struct {
	cfg         config
	h           host.Host
	sys         *transport.Port // the system's transport handle (config.Port)
	incarnation uint64
	log         *slog.Logger
	logLimit    logLimiter   // protocol errors' lines, per peer (loglimit.go)
	readers     readerBudget // what stream readers hold node-wide (reader_budget.go)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	fast sync.Map             // peer ID string -> *link, read on every send without a lock
	last atomic.Pointer[link] // the link used last: most sends go to the same peer

	// retireNews wakes watchPeers: a link gave messages up as unreachable
	// and may be due for retirement sooner (retireLater).
	retireNews chan struct{}

	protected map[string]bool // WithProtected

	mu      sync.Mutex                    // guards the fields below up to lossCh, but restarted (set once, by start)
	budgets map[libp2ppeer.ID]*peerBudget // per peer whose streams are read or whose messages actors hold
	sweepAt int                           // the size of budgets at which budgetFor sweeps it next
	links   map[string]*link
	// peers is the protocol state per peer: incarnations, connections,
	// losses, inbound streams (peertable.go), whose actions the router
	// performs.
	peers peerTable
	// closing holds, per peer, a channel closed once the hello that found
	// connections of a former incarnation closed them all (see hello).
	closing   map[libp2ppeer.ID]chan struct{}
	restarted event.Emitter // of EvtPeerRestarted, from start
	closed    bool
	lossCh    chan struct{} // closed and replaced when a peer's losses were acted on or forgotten (awaitLoss)

	lossSeq atomic.Uint64 // numbers this node's declarations and requests: drawn by writers too (link.drawLoss)

	sent, received, linkFull, tooLarge, tooLargeIn, decodeErrors, streamsReset, slowStreams atomic.Uint64
	lossesDeclared, lossesHeard                                                             atomic.Uint64
	refused, unknownTypes, readerPanics, paused, shed, movedOffRelay                        atomic.Uint64
	replyPaused, replyPausesHeard                                                           atomic.Uint64
	undeliverable, peersDown, encodeErrors, hellos, writtenThrough                          atomic.Uint64
	streams                                                                                 atomic.Uint64 // streams opened: numbers them in hellos
	counts                                                                                  sync.Map      // libp2ppeer.ID → *peerCounts (traffic.go)

	repliesRefused atomic.Uint64 // Stats.RepliesRefused (deliver.go)

	hooks hooks // tests only: all nil outside tests
}

var _ transport.Remote = (*Router)(nil)

// New creates a router on h carrying messages of the types of reg (the
// router adds its own) to and from the actor system of p: call it in the
// transport.Factory given to transport.NewSystem, and return the router as
// the system's Remote. Options: WithLogger, WithMaxFrame, WithLinkQueue,
// WithProtected, WithIncarnation, WithPeerBudget, WithPauseGrace. Close it
// before closing the host.
func New(h host.Host, reg *codec.Registry, p *transport.Port, opts ...Option) (*Router, error) {
	cfg, err := apply(config{Host: h, Registry: reg, Port: p}, opts)
	if err != nil {
		return nil, err
	}
	return newRouter(cfg)
}

// newRouter is New on a config (tests build theirs).
func newRouter(cfg config) (*Router, error) {
	if cfg.Host == nil || cfg.Registry == nil || cfg.Port == nil {
		return nil, fmt.Errorf("%w: host, registry and port are required", ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = codec.DefaultMaxFrame
	}
	cfg.MaxFrame = min(cfg.MaxFrame, codec.MaxFrameLimit) // as the codec clamps it
	if cfg.LinkQueue <= 0 {
		cfg.LinkQueue = 64 << 10
	}
	if cfg.PeerBudget <= 0 {
		cfg.PeerBudget = DefaultPeerBudget
	}
	if cfg.PauseGrace <= 0 {
		cfg.PauseGrace = DefaultPauseGrace
	}
	cfg.timings = cfg.timings.withDefaults()
	if err := registerWire(cfg.Registry); err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	if cfg.Incarnation == 0 {
		inc, err := NewIncarnation()
		if err != nil {
			return nil, err
		}
		cfg.Incarnation = inc
	}
	floor := cmp.Or(cfg.readerFloor, readerFloor(cfg.MaxFrame))
	r := &Router{
		cfg: cfg, h: cfg.Host, sys: cfg.Port, log: cfg.Logger,
		logLimit: logLimiter{every: cfg.timings.logEvery, max: maxLogKeys},
		readers: readerBudget{limit: cmp.Or(cfg.readerMemory, DefaultReaderMemory), floor: floor,
			perAddr: cmp.Or(cfg.readerPerAddr, readerPerAddress(floor)), maxStreams: cfg.readerStreams},
		incarnation: cfg.Incarnation,
		links:       make(map[string]*link),
		budgets:     make(map[libp2ppeer.ID]*peerBudget),
		protected:   make(map[string]bool),
		retireNews:  make(chan struct{}, 1),
		peers:       newPeerTable(network.Conn.IsClosed),
		closing:     make(map[libp2ppeer.ID]chan struct{}),
		lossCh:      make(chan struct{}),
	}
	r.peers.delays = cfg.timings.retireDelays
	for _, name := range cfg.Protected {
		r.protected[name] = true
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if err := r.start(); err != nil {
		r.cancel()
		return nil, err
	}
	return r, nil
}

// start installs the stream handlers and starts watching peer
// connectivity: the last step of newRouter, once r holds its Port.
func (r *Router) start() error {
	sub, err := r.h.EventBus().Subscribe([]any{new(event.EvtPeerConnectednessChanged), new(event.EvtPeerIdentificationCompleted)})
	if err != nil {
		return fmt.Errorf("routing: subscribe to connectedness: %w", err)
	}
	if r.restarted, err = r.h.EventBus().Emitter(new(EvtPeerRestarted)); err != nil {
		_ = sub.Close()
		return fmt.Errorf("routing: event emitter: %w", err)
	}
	for _, p := range protocols {
		r.h.SetStreamHandler(p, r.handleStream)
	}
	r.wg.Add(1)
	go r.watchPeers(sub)
	return nil
}

// Incarnation returns the random number this router's peer start drew.
func (r *Router) Incarnation() uint64 { return r.incarnation }

// Stats returns the router's counters.
func (r *Router) Stats() Stats {
	st := Stats{
		Sent: r.sent.Load(), Received: r.received.Load(), LinkFull: r.linkFull.Load(),
		TooLarge: r.tooLarge.Load(), TooLargeIn: r.tooLargeIn.Load(), DecodeErrors: r.decodeErrors.Load(),
		StreamsReset: r.streamsReset.Load(), SlowStreams: r.slowStreams.Load(), Undeliverable: r.undeliverable.Load(),
		PeersDown: r.peersDown.Load(), EncodeErrors: r.encodeErrors.Load(),
		LossesDeclared: r.lossesDeclared.Load(), LossesHeard: r.lossesHeard.Load(),
		Refused: r.refused.Load(), UnknownTypes: r.unknownTypes.Load(), ReaderPanics: r.readerPanics.Load(),
		Paused:           r.paused.Load(),
		Shed:             r.shed.Load(),
		ReplyPaused:      r.replyPaused.Load(),
		ReplyPausesHeard: r.replyPausesHeard.Load(),
		MovedOffRelay:    r.movedOffRelay.Load(),
		RepliesRefused:   r.repliesRefused.Load(),
		RemoteIncarnated: r.hellos.Load(), WrittenThrough: r.writtenThrough.Load(),
	}
	r.mu.Lock()
	for _, l := range r.links {
		st.QueuedUser += l.user.q.len()
		st.QueuedCtl += l.ctl.q.len()
		st.ConnectedLinks++
	}
	r.mu.Unlock()
	rs := r.readers.stat()
	st.ReaderBytes, st.ReaderPeers, st.ReaderAddrs, st.ReaderStreams, st.ReaderRefused = rs.held, rs.peers, rs.addrs, rs.streams, rs.refused
	return st
}

// Close stops every link, waiting until ctx ends for queued messages to be
// written and read by their peers (each peer's reader closes its side of
// a stream once it handed the stream's last message to its actors), then
// resets what remains. It is idempotent.
func (r *Router) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.wg.Wait()
		return nil
	}
	r.closed = true
	r.fast.Clear()
	r.last.Store(nil)
	links := make([]*link, 0, len(r.links))
	for _, l := range r.links {
		// A sender that found l before the lookups were cleared (and
		// may have made it r.last again) finds it retired, looks again,
		// and gets ErrClosed: nothing is queued that no writer would take.
		l.shut()
		links = append(links, l)
	}
	r.mu.Unlock()
	for _, p := range protocols {
		r.h.RemoveStreamHandler(p)
	}
	for _, l := range links {
		l.drain()
	}
	done := make(chan struct{})
	go func() {
		for _, l := range links {
			l.wg.Wait()
		}
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("routing: close: queued messages may be lost: %w", ctx.Err())
	}
	r.cancel()
	for _, l := range links {
		l.abort() // writers blocked in a write return now
	}
	<-done
	r.wg.Wait()
	if r.restarted != nil {
		_ = r.restarted.Close()
	}
	return err
}
