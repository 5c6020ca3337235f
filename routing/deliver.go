package routing

import (
	"context"
	"fmt"
	"sync"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// What goes out: the router as the actor system's Remote (Deliver),
// BatchRemote (DeliverBatch) and DirectRemote (DeliverDirect), plain
// code's DeliverCtx, and the link each message is queued on.

// Deliver queues msg for the actor to on its peer. It never blocks: a full
// queue (for msg's kind: see rooms.admits) returns ErrLinkFull, and a reply
// refused so is reported to its asker (refusedReply). from is an actor
// of this peer or the zero Ref: only its name is kept (the receiver takes
// the stream's remote peer as the sender's). Implements transport.Remote.
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
			err := fmt.Errorf("%w: %v", ErrLinkFull, l.peer)
			if reply {
				l.refusedReply(to.Name(), from.Name(), msg, corr, err)
			}
			return err
		}
	}
}

// refusedReply tells the asker of a reply that will not be sent, for
// reason (its queue refused it, or its writer did: too large,
// unencodable, unreachable), that it will not come: an Undeliverable
// with reason, on the control queue and in its room for replies, so that
// the asker's Ask fails at once rather than at its timeout. It reports
// whether it was queued: not when msg is itself an Undeliverable (which
// nothing answers), nor when the control queue is full too (the Ask
// then times out). to is the asker, from the replying actor.
func (l *link) refusedReply(to, from string, msg any, corr uint64, reason error) bool {
	if _, ok := msg.(transport.Undeliverable); ok || corr == 0 || to == "" {
		return false
	}
	u := transport.Undeliverable{Reason: reason}
	if !l.ctl.q.pushBelow(to, from, u, corr, true, l.ctl.q.max) {
		return false
	}
	l.r.repliesRefused.Add(1)
	return true
}

// DeliverDirect queues msg as Deliver does and, when the link's writer
// sleeps with an open stream, writes it at once on the calling goroutine
// instead of waking the writer: one goroutine hand-off less for a caller
// that waits for the answer anyway (System.Ask), at the price of waiting
// for the write, until ctx's deadline at most (a write cut short leaves
// the rest to the writer: nothing is lost, and the stream stays). With
// less than a second left, ctx done, or a ctx that can be cancelled but
// has no deadline, the writer writes it as for Deliver. It must not be
// called on an event loop. Implements transport.DirectRemote.
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
		q.q.handBack(true, nil) // the writer's job, with its own deadline
	}
	return nil
}

// pushDirect queues msg for DeliverDirect (pushClaim), on a new link if
// the peer's was retired meanwhile, and returns its queue and whether the
// caller took over waking the writer. A reply its full queue refuses is
// reported to its asker, as Deliver does.
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
			err := fmt.Errorf("%w: %v", ErrLinkFull, l.peer)
			if reply {
				l.refusedReply(to.Name(), from.Name(), msg, corr, err)
			}
			return nil, false, err
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
// queue: ErrLinkFull, counted and reported, if a reply, as Deliver does)
// and returns how many it queued. It never blocks. Implements
// transport.BatchRemote.
func (r *Router) DeliverBatch(from actor.Ref, msgs []transport.Outbound) (int, error) {
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
			err := fmt.Errorf("%w: %v", ErrLinkFull, l.peer)
			if m := &msgs[done]; m.Reply {
				l.refusedReply(m.To.Name(), fromName, m.Msg, m.Corr, err)
			}
			return done, err
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
func (r *Router) DeliverCtx(ctx context.Context, e transport.Envelope) error {
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
func (r *Router) checkUser(e *transport.Envelope) error {
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
		if r.hooks.linkFound != nil {
			r.hooks.linkFound(l)
		}
		return l, nil
	}
	if l, ok := r.fast.Load(peerStr); ok && !l.(*link).retired.Load() {
		r.last.Store(l.(*link))
		if r.hooks.linkFound != nil {
			r.hooks.linkFound(l.(*link))
		}
		return l.(*link), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, ErrClosed
	}
	if l := r.links[peerStr]; l != nil && !l.retired.Load() {
		return l, nil
	}
	id, err := libp2ppeer.Decode(peerStr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadPeer, peerStr, err)
	}
	l := newLink(r, id, peerStr)
	l.lost.Store(r.peers.lost(id))
	r.links[peerStr] = l
	r.fast.Store(peerStr, l)
	l.start()
	return l, nil
}
