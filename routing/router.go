package routing

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

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

// Config configures a Router.
type Config struct {
	Host      host.Host       // the libp2p host whose streams carry the messages (required)
	Registry  *codec.Registry // the message types; the router adds its own (required)
	Logger    *slog.Logger    // nil: slog.Default()
	MaxFrame  int             // largest frame sent or accepted (0: codec.DefaultMaxFrame; at most codec.MaxFrameLimit)
	LinkQueue int             // messages that may wait per peer and protocol (0: 65,536)
	// Protected names actors that other peers may not link to or send
	// exit signals to (a peer's own service actors, such as "$node"):
	// such signals are dropped. Monitors and messages reach them as usual.
	Protected []string
	// Incarnation is the number this start of the peer goes by (0: the
	// router draws one). Give the host AgentVersion(Incarnation) as its
	// identify agent version (libp2p.UserAgent), so that every peer
	// learns it when a connection is set up, both ways, before any stream.
	Incarnation uint64
	// PeerBudget is the bytes of messages one peer may have delivered to
	// local actors that did not handle them yet (0: DefaultPeerBudget);
	// at it, the peer's streams pause until the actors handled half (see
	// budget.go).
	PeerBudget int64
	// PauseGrace is how long a peer may stay paused at its budget before
	// the messages its actors saved for a later receive are shed (0:
	// DefaultPauseGrace; see budget.go).
	PauseGrace time.Duration
}

// NewIncarnation draws a random incarnation number (never 0).
func NewIncarnation() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("routing: incarnation: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]) | 1, nil
}

// agentIncarnation is what precedes the incarnation in an agent version.
const agentIncarnation = " incarnation/"

// AgentVersion returns the identify agent version that announces inc.
func AgentVersion(inc uint64) string {
	return "troupe/1" + agentIncarnation + strconv.FormatUint(inc, 16)
}

// parseAgentVersion returns the incarnation an agent version announces.
func parseAgentVersion(agent string) (uint64, bool) {
	_, hex, ok := strings.Cut(agent, agentIncarnation)
	if !ok || !strings.HasPrefix(agent, "troupe/") {
		return 0, false
	}
	inc, err := strconv.ParseUint(hex, 16, 64)
	return inc, err == nil && inc != 0
}

// Stats are the router's counters.
type Stats struct {
	Sent, Received   uint64 // messages sent; received and handed on: to their actors, or a stream's hello to the router (a large message in fragments counts once)
	LinkFull         uint64 // messages dropped because a link queue was full
	TooLarge         uint64 // messages refused at the sender
	TooLargeIn       uint64 // messages refused at the receiver: over its maximum frame, from a sender whose maximum is larger
	DecodeErrors     uint64 // frames that could not be decoded
	StreamsReset     uint64 // inbound streams reset for bad input, a stall, or a memory limit
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
	Paused           uint64 // times a peer's stream reader paused, the peer at its budget (see Config.PeerBudget)
	Shed             uint64 // times a peer stayed paused for Config.PauseGrace and its actors' saved messages were shed
}

// Router carries actor messages between peers over libp2p streams: one
// long-lived outbound stream per peer and protocol, written by one goroutine
// that drains a bounded queue and flushes when it is empty. It implements
// actor.Remote. Methods are safe for concurrent use.
type Router struct {
	cfg         Config
	h           host.Host
	sys         *actor.Port // the bound system's transport handle
	incarnation uint64
	log         *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	fast sync.Map             // peer ID string -> *link, read on every send without a lock
	last atomic.Pointer[link] // the link used last: most sends go to the same peer

	// unreachable holds the peers whose links gave up messages as
	// unreachable, for watchPeers to retire their links (see
	// retireLater), which unreachableNews wakes.
	unreachableMu   sync.Mutex
	unreachable     map[libp2ppeer.ID]struct{}
	unreachableNews chan struct{}

	protected map[string]bool // Config.Protected

	mu      sync.Mutex                    // guards links, remote, inbound, closed
	inbound map[inboundKey][]*reader      // inbound streams open per peer and protocol, oldest first
	budgets map[libp2ppeer.ID]*peerBudget // per peer whose streams are read or whose messages actors hold
	sweepAt int                           // the size of budgets at which budgetFor sweeps it next
	links   map[string]*link
	remote  map[libp2ppeer.ID]uint64 // incarnation last seen per peer
	// conns holds the incarnation each open connection's peer announced
	// on it (identify, or a stream's hello), to close those of an
	// incarnation that ended.
	conns map[libp2ppeer.ID]map[network.Conn]uint64
	// closing holds, per peer, a channel closed once the hello that found
	// connections of a former incarnation closed them all (see hello).
	closing   map[libp2ppeer.ID]chan struct{}
	restarted event.Emitter // of EvtPeerRestarted, from Bind
	closed    bool
	// Losses (see loss.go), per peer: this node's last declaration toward
	// it; the last of its declarations taken on here, and acted on (its
	// PeerDown done); and the one a user stream of its must wait for
	// after a reset here. lossCh is closed and replaced when acted
	// changes.
	lost, heard, acted, want map[libp2ppeer.ID]uint64
	lossCh                   chan struct{}
	lossSeq                  atomic.Uint64 // numbers this node's declarations

	sent, received, linkFull, tooLarge, tooLargeIn, decodeErrors, streamsReset atomic.Uint64
	lossesDeclared, lossesHeard                                                atomic.Uint64
	refused, unknownTypes, readerPanics, paused, shed                          atomic.Uint64
	undeliverable, peersDown, encodeErrors, hellos, writtenThrough             atomic.Uint64
	streams                                                                    atomic.Uint64 // streams opened: numbers them in hellos
}

var _ actor.Remote = (*Router)(nil)

// New creates a router on h. Bind it to the actor system before traffic
// flows; Close it before closing the host.
func New(cfg Config) (*Router, error) {
	if cfg.Host == nil || cfg.Registry == nil {
		return nil, fmt.Errorf("%w: host and registry are required", ErrInvalidConfig)
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
	r := &Router{
		cfg: cfg, h: cfg.Host, log: cfg.Logger,
		incarnation:     cfg.Incarnation,
		links:           make(map[string]*link),
		inbound:         make(map[inboundKey][]*reader),
		budgets:         make(map[libp2ppeer.ID]*peerBudget),
		protected:       make(map[string]bool),
		unreachableNews: make(chan struct{}, 1),
		remote:          make(map[libp2ppeer.ID]uint64),
		conns:           make(map[libp2ppeer.ID]map[network.Conn]uint64),
		closing:         make(map[libp2ppeer.ID]chan struct{}),
		lost:            make(map[libp2ppeer.ID]uint64),
		heard:           make(map[libp2ppeer.ID]uint64),
		acted:           make(map[libp2ppeer.ID]uint64),
		want:            make(map[libp2ppeer.ID]uint64),
		lossCh:          make(chan struct{}),
	}
	for _, name := range cfg.Protected {
		r.protected[name] = true
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// Bind attaches the actor system that incoming messages go to, installs
// the stream handlers and starts watching peer connectivity. It must be
// called once, before any message is given to the router (until then they
// are refused with ErrNotBound).
func (r *Router) Bind(sys *actor.System) error {
	if sys == nil {
		return fmt.Errorf("%w: Bind of a nil system", ErrNotBound)
	}
	r.mu.Lock()
	bound := r.sys != nil
	if !bound {
		r.sys = sys.Port()
	}
	r.mu.Unlock()
	if bound {
		return fmt.Errorf("%w: Bind called twice", ErrBound)
	}
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

// Deliver queues msg for the actor to on its peer. It never blocks: a full
// queue returns ErrLinkFull. from is an actor of this peer or the zero
// Ref: only its name is kept (the receiver takes the stream's remote peer
// as the sender's). Implements actor.Remote.
func (r *Router) Deliver(to, from actor.Ref, msg any, corr uint64, reply bool) error {
	for {
		l, err := r.link(to.Peer())
		if err != nil {
			return err
		}
		q := l.queueFor(msg)
		if q.pushBelow(to.Name(), from.Name(), msg, corr, reply, q.max) {
			return nil
		}
		if !l.retired.Load() {
			r.linkFull.Add(1)
			return fmt.Errorf("%w: %v", ErrLinkFull, l.peer)
		}
	}
}

// DeliverDirect queues msg as Deliver does and, when the link's writer
// sleeps with an open stream, writes it at once on the calling goroutine
// instead of waking the writer: one goroutine hand-off less for a caller
// that waits for the answer anyway (System.Ask), at the price of waiting
// for the write, until ctx's deadline at most (a write cut short leaves
// the rest to the writer: nothing is lost, and the stream stays). With
// less than a second left, ctx done, or a ctx that can be cancelled but
// has no deadline, the writer writes it as for Deliver. It must not be
// called on an event loop. Implements actor.DirectRemote.
func (r *Router) DeliverDirect(ctx context.Context, to, from actor.Ref, msg any, corr uint64, reply bool) error {
	q, claimed, err := r.pushDirect(to, from, msg, corr, reply)
	if err != nil || !claimed {
		return err
	}
	// A context that can end only by cancellation (no deadline) could not
	// end the write: the writer takes it, and the Ask returns as soon as
	// it is cancelled.
	deadline, ok := ctx.Deadline()
	if ctx.Err() == nil && (ok && time.Until(deadline) >= minWriteThrough || !ok && ctx.Done() == nil) {
		if limit := time.Now().Add(maxWriteThrough); ok && deadline.After(limit) {
			deadline = limit // a cancellation does not reach a write in progress
		}
		q.w.writeThrough(deadline)
	} else {
		q.q.wakeIfQueued(true) // the writer's job, with its own deadline
	}
	return nil
}

// pushDirect queues msg for DeliverDirect (pushClaim), on a new link if
// the peer's was retired meanwhile, and returns its queue and whether the
// caller took over waking the writer.
func (r *Router) pushDirect(to, from actor.Ref, msg any, corr uint64, reply bool) (*queue, bool, error) {
	for {
		l, err := r.link(to.Peer())
		if err != nil {
			return nil, false, err
		}
		q := l.queueOf(msg)
		if ok, claimed := q.q.pushClaim(to.Name(), from.Name(), msg, corr, reply); ok {
			return q, claimed, nil
		}
		if !l.retired.Load() {
			r.linkFull.Add(1)
			return nil, false, fmt.Errorf("%w: %v", ErrLinkFull, l.peer)
		}
	}
}

// minWriteThrough is the least time an Ask must have left to write its
// request itself. A write that its deadline cuts short leaves the rest to
// the writer (see writer.send) and the stream intact, but the asker, who
// meant to save the hand-off, waited on a stalled peer for nothing; a
// short deadline says the hand-off is the better bet.
const minWriteThrough = time.Second

// maxWriteThrough bounds the wait of a write-through whose context can end
// (a cancellation does not reach a write in progress): past it, as past
// the context's deadline, the writer writes the rest, and an Ask that was
// cancelled meanwhile returns. (A context that cannot end waits as long as
// the writer's own deadline allows.)
const maxWriteThrough = time.Second

// DeliverBatch queues msgs, all from the actor from, in order, taking
// each link queue's lock once per run of messages to the same peer and
// queue. It stops at the first message that cannot be queued (a full
// queue: ErrLinkFull, counted as Deliver counts it) and returns how many
// it queued. It never blocks. Implements actor.BatchRemote.
func (r *Router) DeliverBatch(from actor.Ref, msgs []actor.Outbound) (int, error) {
	fromName := from.Name()
	done := 0
	for done < len(msgs) {
		peer := msgs[done].To.Peer()
		l, err := r.link(peer)
		if err != nil {
			return done, err
		}
		ctl := isControl(msgs[done].Msg)
		end := done + 1
		for end < len(msgs) && msgs[end].To.Peer() == peer && isControl(msgs[end].Msg) == ctl {
			end++
		}
		q := l.user.q
		if ctl {
			q = l.ctl.q
		}
		done += q.pushRun(fromName, msgs[done:end])
		if done < end && !l.retired.Load() {
			r.linkFull.Add(1)
			return done, fmt.Errorf("%w: %v", ErrLinkFull, l.peer)
		}
		// A retired link: the rest goes to the peer's new link.
	}
	return done, nil
}

// DeliverCtx queues e for its peer as Deliver does, waiting for queue space until ctx ends:
// backpressure for plain Go code. It waits as soon as 8,192 messages (or
// the whole LinkQueue, if smaller) wait for that peer, leaving the rest of
// the queue to Deliver, which cannot wait: enough to keep the link busy
// without holding many messages in memory. On an event loop it never
// waits: it returns actor.ErrBlockingCall instead.
//
// A user message is encoded once on the caller's goroutine first, so that
// one the link's writer would refuse is refused here, with the error
// (ErrTooLarge, or the codec's, such as codec.ErrUnregistered), instead of
// becoming a dead letter after DeliverCtx returned nil.
func (r *Router) DeliverCtx(ctx context.Context, e actor.Envelope) error {
	l, err := r.link(e.To.Peer())
	if err != nil {
		return err
	}
	if !isControl(e.Msg) {
		if err := r.checkUser(&e); err != nil {
			return err
		}
	}
	for {
		if err := l.enqueueCtx(ctx, &e); err != errRetired {
			return err
		}
		if l, err = r.link(e.To.Peer()); err != nil {
			return err
		}
	}
}

// checkUser returns the error the link's writer would meet for the user
// message of e, learning its body's length from the codec without
// encoding it when it is a plain struct, else by encoding it into scratch
// memory: the codec's, or ErrTooLarge for
// a body over the maximum frame, or a frame over it whose body is too
// small to travel in fragments. (Towards a peer of version 1.0.0, which
// takes no fragments, a body a few bytes short of the maximum can still
// be refused by the writer: its names do not fit beside it.) A message
// refused is counted as the writer counts it.
func (r *Router) checkUser(e *actor.Envelope) error {
	typ, size, ok := r.cfg.Registry.BodySize(e.Msg) // a plain struct: no need to encode it
	if !ok {
		var err error
		if typ, size, err = r.encodedSize(e.Msg); err != nil {
			r.encodeErrors.Add(1)
			return err
		}
	}
	if size <= fragmentData {
		var err error
		env := codec.Envelope{Kind: codec.KindUser, To: e.To.Name(), FromName: e.From.Name(), Type: typ, Corr: e.Corr}
		if size, err = codec.EnvelopeSizeWithBody(&env, size); err != nil {
			r.encodeErrors.Add(1)
			return err
		}
	}
	if size > r.cfg.MaxFrame {
		r.tooLarge.Add(1)
		return fmt.Errorf("%w: message of %d bytes exceeds limit of %d", ErrTooLarge, size, r.cfg.MaxFrame)
	}
	return nil
}

// encodedSize encodes msg into scratch memory and returns its type name
// and the length of its body, or the codec's error.
func (r *Router) encodedSize(msg any) (string, int, error) {
	buf := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(buf)
	typ, body, err := r.cfg.Registry.AppendEncode((*buf)[:0], msg)
	if cap(body) <= maxScratch {
		*buf = body[:0]
	}
	return typ, len(body), err
}

// scratchPool holds the buffers encodedSize encodes into.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

func (r *Router) link(peerStr string) (*link, error) {
	if l := r.last.Load(); l != nil && l.peerStr == peerStr && !l.retired.Load() {
		if testHookLinkFound != nil {
			testHookLinkFound(l)
		}
		return l, nil
	}
	if l, ok := r.fast.Load(peerStr); ok && !l.(*link).retired.Load() {
		r.last.Store(l.(*link))
		if testHookLinkFound != nil {
			testHookLinkFound(l.(*link))
		}
		return l.(*link), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, ErrClosed
	case r.sys == nil: // no link before Bind: its writers need the system
		return nil, ErrNotBound
	}
	if l := r.links[peerStr]; l != nil && !l.retired.Load() {
		return l, nil
	}
	id, err := libp2ppeer.Decode(peerStr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadPeer, peerStr, err)
	}
	l := newLink(r, id, peerStr)
	r.links[peerStr] = l
	r.fast.Store(peerStr, l)
	l.start()
	return l, nil
}

// Stats returns the router's counters.
func (r *Router) Stats() Stats {
	st := Stats{
		Sent: r.sent.Load(), Received: r.received.Load(), LinkFull: r.linkFull.Load(),
		TooLarge: r.tooLarge.Load(), TooLargeIn: r.tooLargeIn.Load(), DecodeErrors: r.decodeErrors.Load(),
		StreamsReset: r.streamsReset.Load(), Undeliverable: r.undeliverable.Load(),
		PeersDown: r.peersDown.Load(), EncodeErrors: r.encodeErrors.Load(),
		LossesDeclared: r.lossesDeclared.Load(), LossesHeard: r.lossesHeard.Load(),
		Refused: r.refused.Load(), UnknownTypes: r.unknownTypes.Load(), ReaderPanics: r.readerPanics.Load(),
		Paused:           r.paused.Load(),
		Shed:             r.shed.Load(),
		RemoteIncarnated: r.hellos.Load(), WrittenThrough: r.writtenThrough.Load(),
	}
	r.mu.Lock()
	for _, l := range r.links {
		st.QueuedUser += l.user.q.len()
		st.QueuedCtl += l.ctl.q.len()
		st.ConnectedLinks++
	}
	r.mu.Unlock()
	return st
}

// watchPeers turns disconnections into PeerDown, so that monitors and links
// on the departed peer's actors fire, and records the incarnation a peer
// announces when a connection to it is identified (a new one is a
// restart: see hello).
func (r *Router) watchPeers(sub event.Subscription) {
	defer r.wg.Done()
	defer sub.Close()
	var retries retryRetire
	defer retries.stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-retries.due():
			retries.run(func(peer string) bool { _, busy := r.retire(peer); return busy })
		case <-r.unreachableNews:
			r.unreachableMu.Lock()
			ids := r.unreachable
			r.unreachable = nil
			r.unreachableMu.Unlock()
			for id := range ids {
				// A link made after its peer left (a message sent to it
				// since) gets no disconnection event of its own.
				if r.h.Network().Connectedness(id) != network.Connected {
					retries.add(id.String(), 0)
				}
			}
		case ev, ok := <-sub.Out():
			if !ok {
				return
			}
			switch e := ev.(type) {
			case event.EvtPeerConnectednessChanged:
				if e.Connectedness == network.NotConnected {
					r.peerGone(e.Peer, &retries)
				}
			case event.EvtPeerIdentificationCompleted:
				// One subscription for both: a peer's disconnection
				// and its next identification come in order.
				if inc, ok := parseAgentVersion(e.AgentVersion); ok {
					r.hello(e.Peer, inc, e.Conn)
				}
			}
		}
	}
}

func (r *Router) peerGone(id libp2ppeer.ID, retries *retryRetire) {
	r.mu.Lock()
	delete(r.remote, id)
	delete(r.conns, id)
	r.forgetLosses(id)
	r.mu.Unlock()
	r.peersDown.Add(1)
	r.sys.PeerDown(id.String())
	if _, busy := r.retire(id.String()); busy {
		retries.add(id.String(), 0)
	}
}

// retireLater asks watchPeers to retire the link to id, which just gave up
// messages as unreachable, once it is idle, unless the peer is connected
// again. It never blocks, and forgets none however many links give up at
// once: each would keep its goroutines and buffers until Close.
func (r *Router) retireLater(id libp2ppeer.ID) {
	r.unreachableMu.Lock()
	if r.unreachable == nil {
		r.unreachable = make(map[libp2ppeer.ID]struct{})
	}
	r.unreachable[id] = struct{}{}
	r.unreachableMu.Unlock()
	select {
	case r.unreachableNews <- struct{}{}:
	default: // watchPeers was woken already and will see id
	}
}

// retireDelays are the waits before retire tries again a link that was
// busy when its peer disconnected (its writers were giving up what they
// held, which takes three dials).
var retireDelays = [...]time.Duration{time.Second, 5 * time.Second, 30 * time.Second}

// retryRetire holds the links that watchPeers tries to retire again, each
// after the next of retireDelays; its zero value holds none.
type retryRetire struct {
	pending []pendingRetire
	held    map[string]bool // the peers in pending
	timer   *time.Timer
}

type pendingRetire struct {
	peer    string
	attempt int // index in retireDelays of the wait now running
	at      time.Time
}

// add schedules a retry of peer's link after retireDelays[attempt],
// unless one is pending already.
func (t *retryRetire) add(peer string, attempt int) {
	if t.held[peer] {
		return
	}
	if t.held == nil {
		t.held = make(map[string]bool)
	}
	t.held[peer] = true
	t.pending = append(t.pending, pendingRetire{peer, attempt, time.Now().Add(retireDelays[attempt])})
	t.arm()
}

// arm sets the timer for the earliest pending retry.
func (t *retryRetire) arm() {
	if len(t.pending) == 0 {
		return
	}
	next := t.pending[0].at
	for _, p := range t.pending[1:] {
		if p.at.Before(next) {
			next = p.at
		}
	}
	if t.timer == nil {
		t.timer = time.NewTimer(time.Until(next))
	} else {
		t.timer.Reset(time.Until(next))
	}
}

// due fires when a retry is due (never without one).
func (t *retryRetire) due() <-chan time.Time {
	if t.timer == nil || len(t.pending) == 0 {
		return nil
	}
	return t.timer.C
}

// run retries what is due with retire, which reports whether the link is
// still busy, and keeps that for later.
func (t *retryRetire) run(retire func(peer string) (busy bool)) {
	now, kept := time.Now(), t.pending[:0]
	var again []pendingRetire
	for _, p := range t.pending {
		switch {
		case p.at.After(now):
			kept = append(kept, p)
		case p.attempt+1 < len(retireDelays):
			if retire(p.peer) {
				again = append(again, p)
			} else {
				delete(t.held, p.peer)
			}
		default:
			retire(p.peer)
			delete(t.held, p.peer)
		}
	}
	clear(t.pending[len(kept):])
	t.pending = kept
	for _, p := range again {
		t.pending = append(t.pending, pendingRetire{p.peer, p.attempt + 1, now.Add(retireDelays[p.attempt+1])})
	}
	t.arm()
}

func (t *retryRetire) stop() {
	if t.timer != nil {
		t.timer.Stop()
	}
}

// retire drops the link to a peer that disconnected if it is idle, so
// that a long-lived peer keeps no goroutines or buffers for the peers it
// once talked to; the next message to that peer makes a new link. A link
// with messages in hand is left to its writer (it redials, or gives them
// up as unreachable). It reports whether it retired one, and whether it
// left one that was busy.
func (r *Router) retire(peerStr string) (retired, busy bool) {
	r.mu.Lock()
	l := r.links[peerStr]
	if r.closed || l == nil || !l.retire() {
		busy = !r.closed && l != nil
		r.mu.Unlock()
		return false, busy
	}
	delete(r.links, peerStr)
	r.fast.Delete(peerStr)
	r.last.CompareAndSwap(l, nil)
	r.wg.Add(1)
	r.mu.Unlock()
	go func() { // Close waits for its writers to stop
		defer r.wg.Done()
		l.wg.Wait()
	}()
	return true, false
}

// hello records a peer's incarnation (from a stream's hello or from the
// peer's identify announcement) as announced on connection c; a new one
// means the peer restarted, and what watched its old incarnation fires.
// The connections of the old incarnation are closed before hello returns:
// a peer killed without closing them (a crash, a reboot, or a QUIC
// connection, which no kernel resets) would otherwise keep them looking
// alive until their idle timeout, and new streams to the restarted peer
// could open on them and lose what they carry. Nor does hello return
// while another hello (the identify announcement and a stream's hello of
// the same connection come concurrently) is closing them: the message
// that follows a hello could otherwise be answered on a stale connection
// that is about to close. c may be nil (tests).
func (r *Router) hello(id libp2ppeer.ID, inc uint64, c network.Conn) {
	r.hellos.Add(1)
	if c != nil && c.IsClosed() {
		return // late news from a connection that ended, perhaps closed here as stale
	}
	var stale []network.Conn
	r.mu.Lock()
	if c != nil && c.IsClosed() {
		// Closed since: the peer's disconnection (peerGone) may have
		// cleared its entries already, which must not come back.
		r.mu.Unlock()
		return
	}
	old, seen := r.remote[id]
	r.remote[id] = inc
	if seen && old != inc {
		r.forgetLosses(id) // a new incarnation numbers its declarations anew
	}
	if c != nil {
		conns := r.conns[id]
		if conns == nil {
			conns = make(map[network.Conn]uint64, 1)
			r.conns[id] = conns
		}
		conns[c] = inc
		for o, oinc := range conns {
			switch {
			case o.IsClosed():
				delete(conns, o)
			case oinc != inc:
				delete(conns, o)
				stale = append(stale, o)
			}
		}
	}
	closing := r.closing[id] // another hello's closes, still running
	var done chan struct{}
	if len(stale) > 0 {
		done = make(chan struct{})
		r.closing[id] = done
	}
	r.mu.Unlock()
	for _, o := range stale {
		r.log.Info("routing: closing a connection of a former incarnation", "peer", id, "conn", o.ID())
		_ = o.Close()
	}
	if done != nil {
		r.mu.Lock()
		if r.closing[id] == done {
			delete(r.closing, id)
		}
		r.mu.Unlock()
		close(done)
	}
	if closing != nil {
		<-closing
	}
	if seen && old != inc {
		r.log.Info("routing: peer restarted", "peer", id)
		r.peersDown.Add(1)
		r.sys.PeerDown(id.String())
		if r.restarted != nil {
			_ = r.restarted.Emit(EvtPeerRestarted{Peer: id})
		}
	}
}

// EvtPeerRestarted is emitted on the host's event bus when a peer turns
// out to be a new incarnation (it restarted with the same identity) while
// it was still connected, or before the old connection's end was noticed:
// the peer left and came back without a libp2p connectedness event in
// between. Monitors of its former actors have fired with
// actor.ErrNodeDown by then. Subscribers must keep reading, as with every
// libp2p event.
type EvtPeerRestarted struct {
	Peer libp2ppeer.ID // the peer that restarted, under the same identity
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

// backoff returns the wait after failed attempt n (1 or 2) of a writer to
// open a stream: 100 ms, then 200 ms. Between batches, libp2p's own dial
// backoff keeps an address that failed from being dialed again for a few
// seconds.
func backoff(n int) time.Duration { return backoffUnit << n }

// testHookLinkFound, set by tests only, runs when link finds a peer's link
// without the router's lock: where a link can be retired under a sender.
var testHookLinkFound func(*link)

// backoffUnit is half the first wait before a redial (a variable for
// tests).
var backoffUnit = 50 * time.Millisecond
