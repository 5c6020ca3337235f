package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// queue is one direction of traffic to a peer: a bounded queue drained by
// one writer goroutine onto one long-lived stream.
type queue struct {
	proto, proto10 protocol.ID // offered in this order
	q              *outQueue
	w              writer
	// writing is when the write its writer's stream waits in began
	// (UnixNano; 0: none): how the reply pause (replypause.go) tells
	// that the peer takes no bytes. Set by the writing right's holder,
	// read by the peer's stream readers.
	writing atomic.Int64
}

// writer is what the writer of a queue has in hand: its stream and the
// batch being written. No lock guards its fields: only the holder of the
// queue's writing right touches them (outQueue.right, linkstate.go): the
// writer goroutine, but while it sleeps with nothing in hand, or a caller
// that took the right from the sleeping writer to write its own request
// through (writeThrough) and hands it back.
type writer struct {
	l     *link
	q     *queue
	later effects // calls into the router and the actor system, for between rounds
	s     network.Stream
	fw    *codec.FrameWriter
	pw    *progressWriter // under fw: s with its write deadline
	batch []outMsg
	p     planner // turns its batches into frames
	// lg is the large message in fragments: only on user streams whose
	// reader knows fragments (1.1.0), nil otherwise.
	lg, lgState *largeOut
	// undo holds the demonitors and unlinks that cancel monitor and link
	// requests a broken stream handed back, and the signals it had in
	// hand that are sent again (see broken): the next stream carries
	// them first, ahead of whatever was queued meanwhile.
	undo     []outMsg
	breaks   int       // streams broken in a row; at maxBreaks, undo is dropped
	directAt time.Time // on a relayed stream: when to look for a direct connection next (relaymove.go)
	// limitedOf is the stream limited was read for (onRelay).
	limitedOf network.Stream
	limited   bool
}

// maxBreaks is how many streams in a row may break before a writer drops
// the cancellations it keeps (undo) rather than reopen for them again.
const maxBreaks = 3

// link is everything this peer sends to one other peer.
type link struct {
	r         *Router
	peer      libp2ppeer.ID
	peerStr   string // peer.String()
	user, ctl queue
	closing   chan struct{} // closed by drain: write what is queued, then stop
	drainOnce sync.Once
	wg        sync.WaitGroup
	retired   atomic.Bool // see retire: its queues take nothing more
	// traffic says that messages went out since the last declared loss
	// (see Router.asked); resetQueued that a resetBody waits in the
	// control queue; loss messages numbered lossFloor or less are stale
	// (the peer disconnected or restarted since) and not sent.
	traffic, resetQueued atomic.Bool
	lossFloor            atomic.Uint64
	// lost is this node's last declaration toward the peer (see
	// drawLoss), which its next user stream's hello announces unless
	// lossFloor covers it.
	lost atomic.Uint64

	mu      sync.Mutex // guards the fields below; a leaf (router.go has the lock order)
	streams map[network.Stream]struct{}
	// unbackedAt is when clearBackoff last cleared libp2p's dial backoff
	// of the peer: both writers dial.
	unbackedAt time.Time
}

// clearBackoff lets the next dial of an unconnected peer try its
// addresses even though an earlier dial failed (libp2p's swarm refuses
// dials to them for 5 s and more after a failure, whoever dialed: the
// DHT, a trimmed connection's redial): a queued message is worth a
// dial, at most one a second per peer.
func (l *link) clearBackoff() {
	sw, ok := l.r.h.Network().(*swarm.Swarm)
	if !ok || sw.Connectedness(l.peer) == network.Connected {
		return
	}
	now := time.Now()
	l.mu.Lock()
	due := now.Sub(l.unbackedAt) >= time.Second
	if due {
		l.unbackedAt = now
	}
	l.mu.Unlock()
	if due {
		sw.Backoff().Clear(l.peer) // outside the leaf: the swarm takes locks of its own
	}
}

// track records an open outbound stream, so that abort can reset it even
// while its writer is blocked in a write.
func (l *link) track(s network.Stream, open bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if open {
		if l.streams == nil {
			l.streams = make(map[network.Stream]struct{})
		}
		l.streams[s] = struct{}{}
	} else {
		delete(l.streams, s)
	}
}

// abort resets every outbound stream of the link.
func (l *link) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.streams {
		_ = s.Reset()
	}
}

func newLink(r *Router, id libp2ppeer.ID, idStr string) *link {
	l := &link{
		r: r, peer: id, peerStr: idStr, closing: make(chan struct{}),
		user: queue{proto: ProtoMsg, proto10: ProtoMsg10, q: newOutQueue(r.cfg.LinkQueue)},
		ctl:  queue{proto: ProtoCtl, proto10: ProtoCtl10, q: newOutQueue(r.cfg.LinkQueue)},
	}
	for _, q := range [2]*queue{&l.user, &l.ctl} {
		q.w.l, q.w.q = l, q
		q.w.p = newPlanner(r.cfg)
	}
	return l
}

func (l *link) start() {
	l.wg.Add(2)
	go l.write(&l.user)
	go l.write(&l.ctl)
}

func (l *link) drain() { l.drainOnce.Do(func() { close(l.closing) }) }

// errRetired is what a push into a retired link's queue reports (pushCtx;
// the other pushes report false and the caller checks link.retired): the
// caller looks the peer's link up again, which makes a new one.
var errRetired = errors.New("routing: link retired")

// retire marks the link retired if it is idle: both writers asleep, with
// nothing queued, held back or to cancel, and no stream open on a live
// connection (the peer may not have read what it carried yet, and a new
// link's stream must not overtake it); its queues then take nothing more,
// and drain lets its writers stop. It reports whether it did. The
// caller removes the link from the router's maps first or after, under
// the router's lock, so that the next lookup makes a new link; a sender
// that still held this one finds it retired and looks again. It takes
// only the queues' locks: what it needs of the writers they published
// there as they gave up their writing right (outQueue.idle).
func (l *link) retire() bool {
	qs := [2]*outQueue{l.user.q, l.ctl.q}
	for _, q := range qs {
		q.mu.Lock()
	}
	idle := true
	for _, q := range qs {
		idle = idle && q.n == 0 && q.idle &&
			(q.idleOn == nil || q.idleOn.Conn().IsClosed()) // a stream on a live connection: what it carried may be unread
	}
	// A push that finds its queue retired checks l.retired to tell that
	// from a full queue: it is set before the queues let anyone in.
	l.retired.Store(idle)
	for _, q := range qs {
		q.retired = idle
		q.mu.Unlock()
	}
	if idle {
		l.drain()
	}
	return idle
}

// shut marks the link retired and its queues closed to new messages, busy
// or not, as the router closes: its writers still write what they hold
// (drain).
func (l *link) shut() {
	l.retired.Store(true)
	for _, q := range [2]*queue{&l.user, &l.ctl} {
		q.q.mu.Lock()
		q.q.retired = true
		q.q.mu.Unlock()
	}
}

// Control is implemented by the message types that travel on the control
// stream with the signals, so that they never wait behind user messages:
// the requests and replies of a peer's own services (name lookup, remote
// spawn).
type Control interface {
	// TroupeControl marks the type; it is never called.
	TroupeControl()
}

// isControl reports whether msg travels on the control stream.
func isControl(msg any) bool {
	switch msg.(type) {
	case transport.Signal, transport.Undeliverable, Control:
		return true
	}
	return false
}

func (l *link) queueFor(msg any) *outQueue { return l.queueOf(msg).q }

// queueOf returns the queue that msg travels on.
func (l *link) queueOf(msg any) *queue {
	if isControl(msg) {
		return &l.ctl
	}
	return &l.user
}

func (l *link) enqueueCtx(ctx context.Context, e *transport.Envelope) error {
	err := l.queueFor(e.Msg).pushCtx(ctx, e, l.closing, l.r.sys.System().InEventLoop)
	if err == ErrClosed && l.retired.Load() {
		err = errRetired // retired while it waited: closing is closed too
	}
	if err != nil && err != errRetired && ctx.Err() != nil {
		return fmt.Errorf("routing: waiting for queue space towards %v: %w", l.peer, err)
	}
	return err
}

// bounce hands m, which will not be sent or may not have arrived, back
// to the actor system (transport.Port.Bounce): an Ask request is answered
// with Undeliverable so the asker fails fast, a monitor or link request
// fires as Down or exit, another message becomes a dead letter; a reply
// that was not sent is reported to its asker (refusedReply). No
// lock may be held (see effects.fail, which collects them).
func (l *link) bounce(m *outMsg, reason error) {
	// The names came from valid Refs, so NewRef does not fail.
	to, _ := actor.NewRef(l.peerStr, m.to)
	l.r.undeliverable.Add(1)
	l.r.log.Debug("routing: message not sent", "to", to, "err", reason)
	var from actor.Ref
	if m.from != "" {
		from, _ = actor.NewRef(l.r.sys.Peer(), m.from)
	}
	l.r.sys.Bounce(transport.Envelope{To: to, From: from, Msg: m.msg, Corr: m.corr, Reply: m.reply}, reason)
	if m.reply && !errors.Is(reason, ErrStreamBroken) {
		// Not sent: its asker is told. (One a broken stream had in hand
		// may have arrived; the loss protocol covers it.)
		l.refusedReply(m.to, m.from, m.msg, m.corr, reason)
	}
}

// open opens a stream to the peer, offering the protocols in order of
// preference, and introduces this peer's incarnation. Its frames are
// compact if the peer chose a protocol version that has them.
func (l *link) open(protos ...protocol.ID) (network.Stream, *progressWriter, *codec.FrameWriter, error) {
	ctx, cancel := context.WithTimeout(l.r.ctx, 10*time.Second)
	defer cancel()
	// A relayed connection carries actor traffic too (its limits cut a
	// stream as a broken one: the loss is declared).
	ctx = network.WithAllowLimitedConn(ctx, "troupe link")
	l.clearBackoff()
	s, err := l.r.h.NewStream(ctx, l.peer, protos...)
	if err != nil {
		return nil, nil, nil, err
	}
	l.track(s, true)
	pw := &progressWriter{s: s}
	fw := codec.NewFrameWriter(pw, l.r.cfg.MaxFrame, codec.WithCompact(isCompact(s.Protocol())))
	h := helloBody{Incarnation: l.r.incarnation, Stream: l.r.streams.Add(1)}
	if lost := l.lost.Load(); !isCtl(s.Protocol()) && lost > l.lossFloor.Load() {
		h.Lost = lost // not when the peer left or restarted since (actForget)
	}
	_, body, err := l.r.cfg.Registry.Encode(h)
	if err == nil {
		err = fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, Type: typeHello, Body: body})
	}
	if err != nil {
		_ = s.Reset()
		l.track(s, false)
		return nil, nil, nil, err
	}
	return s, pw, fw, nil
}
