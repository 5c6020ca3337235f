package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// handleStream reads frames from one inbound stream and hands the messages
// to the local actors: this is what wakes their receive continuations.
// Decoding happens here, on the stream's goroutine. A valid envelope whose
// message does not decode (an unknown type, a body of another shape: the
// sender may run another version of the program) is counted and skipped.
// Garbage is counted and resets the stream: a frame whose envelope is
// malformed (no troupe writer sends one), a fragment on a control stream,
// or a stream that lost sync (bad length, oversize frame, truncated
// frame), or one that stopped in the middle of a frame or of a large
// message for stallTimeout, or whose frame or large message came slower
// than its deadline allows (a trickle; see stallGuard), or whose large frame or message the resource
// manager's memory limits refused (see streamBudget). A stream beyond maxInboundStreams of its peer
// and protocol is reset at once, and counted the same way; as with the
// others, the peer is asked to declare the loss of what it wrote on it.
func (r *Router) handleStream(s network.Stream) {
	remote := s.Conn().RemotePeer()
	key := inboundKey{remote, isCtl(s.Protocol())}
	self := &reader{s: s, done: make(chan struct{})}
	r.mu.Lock()
	if r.closed || !r.peers.streamOpened(key, self, maxInboundStreams) {
		tooMany := !r.closed
		r.mu.Unlock()
		if tooMany { // counted before the reset, which the peer sees
			r.streamsReset.Add(1)
			r.logPeer(slog.LevelWarn, remote, "routing: refusing inbound stream: too many open", "protocol", s.Protocol())
		}
		_ = s.Reset()
		if tooMany && !s.Conn().IsClosed() {
			// What the peer wrote on it is lost: the peer declares it.
			r.askLoss(remote, !key.ctl, "too many inbound streams")
		}
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.peers.streamEnded(key, self)
		r.mu.Unlock()
		close(self.done)
		r.wg.Done()
	}()
	stop := context.AfterFunc(r.ctx, func() { _ = s.Reset() })
	defer stop()

	in := inbound{r: r, remote: remote, remoteStr: remote.String(), conn: s.Conn(), out: r.sys.NewInbound(), key: key, self: self}
	in.peer = r.budgetFor(remote)
	defer r.budgetDone(remote, in.peer)                                       // after the Inbound's last flush
	if ps, ok := s.Scope().(interface{ PeerScope() network.PeerScope }); ok { // libp2p's resource manager
		in.scope = ps.PeerScope()
	}
	in.out.SetCredit(in.peer.credit)
	defer in.out.Close()
	in.v11 = isCompact(s.Protocol()) // compact frames and fragments
	in.ctl = key.ctl
	guard := &stallGuard{s: s, in: &in}
	src := readerSource{peer: remote, addr: sourceAddr(s.Conn().RemoteMultiaddr(), r.cfg.readerLoopback)}
	budget := &streamBudget{scope: s.Scope(), node: &r.readers, src: src}
	in.budget = budget
	fr := codec.NewFrameReader(guard, readFrame(r.cfg.MaxFrame), codec.WithCompact(in.v11), codec.WithBudget(budget))
	guard.fr = fr
	err := in.readSafe(fr)
	budget.Release(budget.held)
	var ne net.Error
	switch {
	case err == nil:
		_ = s.Close()
	case r.ctx.Err() == nil && errors.Is(err, codec.ErrBufferRefused):
		r.streamsReset.Add(1)
		r.logPeer(slog.LevelWarn, remote, "routing: resetting inbound stream: over a memory limit", "protocol", s.Protocol(), "err", err)
		_ = s.ResetWithError(network.StreamResourceLimitExceeded) // tells the writer why
		r.lostInbound(&in, err)
	case errors.Is(err, errReaderPanic):
		r.readerPanics.Add(1)
		r.streamsReset.Add(1)
		r.logPeer(slog.LevelError, remote, "routing: resetting inbound stream: its reader panicked", "protocol", s.Protocol(), "err", err)
		_ = s.Reset()
		r.lostInbound(&in, err)
	case r.ctx.Err() == nil && guard.tooSlow(err):
		r.slowStreams.Add(1)
		r.streamsReset.Add(1)
		r.logPeer(slog.LevelWarn, remote, "routing: resetting inbound stream: a frame or large message came too slowly", "protocol", s.Protocol(), "err", err)
		_ = s.Reset()
		r.lostInbound(&in, err)
	case r.ctx.Err() == nil && (isCodecError(err) || errors.As(err, &ne) && ne.Timeout()):
		r.streamsReset.Add(1)
		r.logPeer(slog.LevelWarn, remote, "routing: resetting inbound stream", "protocol", s.Protocol(), "err", err)
		_ = s.Reset()
		r.lostInbound(&in, err)
	default:
		_ = s.Reset() // closing, or the stream or connection died
	}
}

// lostInbound asks the peer to declare a loss (see askLoss) for the
// stream of in, which was reset here for err, when a peer's writer
// introduced it (a hello: bytes that never made sense ask nothing) and
// its connection lives.
func (r *Router) lostInbound(in *inbound, err error) {
	if in.helloed && !in.conn.IsClosed() {
		r.askLoss(in.remote, !in.ctl, err.Error())
	}
}

// errReaderPanic is the error of a stream whose reader panicked.
var errReaderPanic = errors.New("routing: stream reader panicked")

// readSafe is read, with a panic (a bug, in a decoder say: bytes from a
// peer must never crash the node) returned as an error wrapping
// errReaderPanic, which resets the stream.
func (in *inbound) readSafe(fr *codec.FrameReader) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v\n%s", errReaderPanic, p, debug.Stack())
		}
	}()
	return in.read(fr)
}

// read hands the messages fr reads to their actors until the stream ends
// (nil) or breaks: a codec error that broke the stream (counted in
// decodeErrors), closing, or an error of the stream.
func (in *inbound) read(fr *codec.FrameReader) error {
	r := in.r
	var env codec.Envelope
	for {
		if in.received > 0 && (in.out.Len() >= maxInboundBatch || in.batchBytes >= maxInboundBatchBytes || !fr.Buffered()) {
			if r.hooks.inboundFlush != nil {
				r.hooks.inboundFlush(in)
			}
			in.flush() // before waiting for the network
			if err := in.backpressure(); err != nil {
				return err
			}
			if err := in.replyPause(); err != nil {
				return err
			}
		}
		msg, err := fr.ReadMessage(r.cfg.Registry, &env)
		if err != nil { // checked first: errors.Is is a call per message
			in.flush()
			if errors.Is(err, io.EOF) {
				if in.large.active { // a writer ends a stream between messages
					r.decodeErrors.Add(1)
					return fmt.Errorf("%w: the stream ended inside a message", errFragments)
				}
				return nil
			}
			if r.ctx.Err() != nil || !isCodecError(err) {
				return err
			}
			r.decodeErrors.Add(1)
			if fr.Err() != nil || errors.Is(err, codec.ErrMalformedEnvelope) {
				return err // resets the stream
			}
			r.logPeer(slog.LevelDebug, in.remote, "routing: skipping bad frame", "type", env.Type, "err", err)
			continue
		}
		// Only a system message can be a fragment: a user message is not
		// copied out as a fragmentBody (a store-forwarding stall).
		if env.Kind == codec.KindSystem && in.v11 { // on 1.0.0: a bad system message
			if f, ok := isFragment(&env, msg); ok {
				if in.ctl { // large messages are user messages
					in.flush()
					r.decodeErrors.Add(1)
					return fmt.Errorf("%w: a fragment on a control stream", errFragments)
				}
				if err := in.fragment(&env, f); err != nil {
					in.flush()
					if !errors.Is(err, codec.ErrBufferRefused) { // not the bytes' fault
						r.decodeErrors.Add(1)
					}
					return err // resets the stream
				}
				continue
			}
		}
		// A message over the maximum frame from a sender whose maximum is
		// larger; not a signal (a Down with a long reason, say), which a
		// frame of minReadFrame bounds: it always goes through.
		if n := fr.FrameLen(); n > r.cfg.MaxFrame && env.Kind != codec.KindSystem {
			in.tooLarge(&env, n)
			continue
		}
		in.received++
		in.asks = in.asks || env.Corr != 0 && env.Kind == codec.KindUser // a request: its reply goes back on our user link
		in.size = fr.FrameLen()
		in.batchBytes += in.size
		in.dispatch(&env, msg)
		if in.stale {
			return errStale
		}
	}
}

// errStale ends the reader of a stale stream (see supersede), which is
// reset.
var errStale = errors.New("routing: a newer stream of the writer is being read")

// minReadFrame is the smallest maximum frame a stream reader takes,
// whatever its node's MaxFrame: every frame a 1.1.0 user stream's writer
// sends fits (a fragment: fragmentData bytes of data, names of at most
// codec.MaxNameLen bytes). Peers may differ in MaxFrame: a message over
// the reader's own maximum is refused by itself (see tooLarge), and costs
// the other messages of its stream nothing.
const minReadFrame = 64 << 10

// readFrame is the maximum frame a stream reader takes under a node's
// maximum frame of maxFrame.
func readFrame(maxFrame int) int { return max(maxFrame, minReadFrame) }

// tooLarge refuses a message of size bytes, over the node's maximum frame,
// from a sender whose maximum is larger (env holds its envelope: of the
// message, or of its first fragment): the asker of an Ask gets
// Undeliverable with ErrTooLarge at once, as it would from its own node;
// a reply to an Ask of this node fails that Ask the same way; another
// message becomes a dead letter. The stream goes on.
func (in *inbound) tooLarge(env *codec.Envelope, size int) {
	r := in.r
	r.tooLargeIn.Add(1)
	reason := fmt.Errorf("%w: message of %d bytes exceeds the receiver's limit of %d", ErrTooLarge, size, r.cfg.MaxFrame)
	r.logPeer(slog.LevelDebug, in.remote, "routing: message refused", "type", env.Type, "err", reason)
	to, from, ok := in.envRefs(env)
	if !ok {
		return
	}
	in.flush() // after what came before it
	switch env.Kind {
	case codec.KindReply:
		in.out.Add(&transport.Envelope{To: to, From: from, Msg: transport.Undeliverable{To: from, Reason: reason}, Corr: env.Corr, Reply: true})
		in.out.Flush()
	case codec.KindUser:
		r.sys.Bounce(transport.Envelope{To: to, From: from, Msg: codec.Raw{Type: env.Type}, Corr: env.Corr}, reason)
	}
}

// maxInboundBatch is the most messages, and maxInboundBatchBytes about the
// most bytes, a stream reader decodes before it hands them to the actors
// (and checks its peer's budget).
const (
	maxInboundBatch      = 256
	maxInboundBatchBytes = 1 << 20
)

// inbound is the state of one inbound stream's reader goroutine: the
// messages decoded and not yet handed over, and the last Refs built.
type inbound struct {
	r          *Router
	remote     libp2ppeer.ID
	remoteStr  string
	conn       network.Conn       // the stream's connection (nil in tests without one)
	out        *transport.Inbound // messages decoded and not yet handed over
	received   uint64             // frames decoded and not yet counted in r.received
	refs       refCache
	large      largeIn      // a large message being reassembled
	larges     uint64       // large messages begun on the stream: numbers them for stallGuard
	v11        bool         // the stream is 1.1.0: compact frames and fragments
	ctl        bool         // the stream is a control stream: no fragments
	helloed    bool         // the stream's hello came
	inc        uint64       // the incarnation its hello announced
	stale      bool         // a stream its writer opened later is being read (see supersede)
	key        inboundKey   // its peer and protocol
	self       *reader      // its entry in the peer table's streams
	budget     codec.Budget // charged for a large message; nil: nothing is
	peer       *peerBudget  // the peer's budget for what its actors hold; nil in tests without one
	size       int          // the bytes of the message being dispatched
	batchBytes int          // the bytes of the messages decoded since the last flush
	asks       bool         // asks were decoded since the reply pause's last step (replypause_driver.go)
	scope      network.PeerScope
}

// maxInboundStreams is the most inbound streams of one protocol (user or
// control, any version) that a peer may have open at once. Its writer
// keeps one; a new one, once its hello came, ends the older ones (see
// supersede), which a stream with no hello does not. Each may hold a partial frame and, on a user stream, a large
// message being reassembled, up to the maximum frame each.
const maxInboundStreams = 4

// reader is an inbound stream being read; done is closed when its reader
// returned, having handed on everything it decoded. inc and seq are
// what its hello said, once it came (helloed).
type reader struct {
	s        network.Stream
	done     chan struct{}
	helloed  bool // the peer table's (under Router.mu), as inc and seq
	inc, seq uint64
}

// supersede takes the hello h of in's stream. A writer opens a stream only
// after it gave up its last one (it broke, or its connection went away),
// so the streams of in's peer and protocol that the writer opened before
// carry older messages, and none of them may reach its actor after the
// new stream's first: supersede resets them and waits until their readers
// returned. What an older reader decoded it still hands on; what it had
// not read is lost with its stream, as a writer that gave the stream up
// expects. Which streams are older the writer's numbers say (Seq, in one
// incarnation): streams on two connections may reach their handlers in
// either order. It reports false when a stream the writer opened later is
// being read already: in's stream is stale, and hands nothing on. Without
// a number, streams are taken in the order they arrived.
func (in *inbound) supersede(h helloBody) bool {
	r := in.r
	var buf [maxInboundStreams]peerAction
	r.mu.Lock()
	older, ok := r.peers.streamHello(buf[:0], in.key, in.self, h)
	r.mu.Unlock()
	if !ok {
		return false
	}
	for _, o := range older {
		_ = o.rd.s.Reset()
	}
	if r.hooks.superseded != nil && len(older) > 0 {
		r.hooks.superseded()
	}
	for _, o := range older {
		select {
		case <-o.rd.done:
		case <-r.ctx.Done():
			return true
		}
	}
	return true
}

// inboundKey counts a peer's inbound streams of one protocol.
type inboundKey struct {
	peer libp2ppeer.ID
	ctl  bool
}

// flush hands the decoded messages to their actors, in order, and counts
// them afterwards: once Stats shows a message received, it is in its
// actor's mailbox (or a dead letter), ahead of anything that comes later.
func (in *inbound) flush() {
	in.out.Flush()
	in.batchBytes = 0
	if in.received > 0 {
		in.r.received.Add(in.received)
		in.r.countsOf(in.remote).received.Add(in.received)
		in.received = 0
	}
}

// isCodecError reports whether err is about the bytes received rather
// than the transport.
func isCodecError(err error) bool {
	return errors.Is(err, codec.ErrMalformed) || errors.Is(err, codec.ErrFrameTooLarge) || errors.Is(err, codec.ErrUnknownKind)
}
