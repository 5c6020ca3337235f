package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// queue is one direction of traffic to a peer: a bounded queue drained by
// one writer goroutine onto one long-lived stream.
type queue struct {
	proto protocol.ID
	q     chan actor.Envelope
}

// link is everything this peer sends to one other peer.
type link struct {
	r         *Router
	peer      libp2ppeer.ID
	user, ctl queue
	closing   chan struct{} // closed by drain: write what is queued, then stop
	drainOnce sync.Once
	wg        sync.WaitGroup
}

func newLink(r *Router, id libp2ppeer.ID) *link {
	return &link{
		r: r, peer: id, closing: make(chan struct{}),
		user: queue{proto: ProtoMsg, q: make(chan actor.Envelope, r.cfg.LinkQueue)},
		ctl:  queue{proto: ProtoCtl, q: make(chan actor.Envelope, r.cfg.LinkQueue)},
	}
}

func (l *link) start() {
	l.wg.Add(2)
	go l.write(&l.user)
	go l.write(&l.ctl)
}

func (l *link) drain() { l.drainOnce.Do(func() { close(l.closing) }) }

// isControl reports whether e travels on the control stream.
func isControl(e *actor.Envelope) bool {
	switch e.Msg.(type) {
	case actor.Signal, actor.Undeliverable:
		return true
	}
	return false
}

func (l *link) queueFor(e *actor.Envelope) *queue {
	if isControl(e) {
		return &l.ctl
	}
	return &l.user
}

func (l *link) enqueue(e actor.Envelope) error {
	select {
	case l.queueFor(&e).q <- e:
		return nil
	default:
		l.r.linkFull.Add(1)
		return fmt.Errorf("%w: %v", ErrLinkFull, l.peer)
	}
}

func (l *link) enqueueCtx(ctx context.Context, e actor.Envelope) error {
	select {
	case l.queueFor(&e).q <- e:
		return nil
	case <-l.closing:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("routing: waiting for queue space towards %v: %w", l.peer, ctx.Err())
	}
}

// write is the writer goroutine of one queue: it encodes on this goroutine
// (never on an event loop), writes frames through a batching FrameWriter and
// flushes when the queue is empty.
func (l *link) write(q *queue) {
	defer l.wg.Done()
	var (
		s        network.Stream
		fw       *codec.FrameWriter
		attempts int
	)
	defer func() {
		if s != nil {
			_ = s.Close()
		}
	}()
	for {
		var e actor.Envelope
		select {
		case e = <-q.q:
		case <-l.closing:
			select {
			case e = <-q.q:
			default:
				return // everything queued was written
			}
		case <-l.r.ctx.Done():
			if s != nil {
				_ = s.Reset()
				s = nil
			}
			return
		}
		for s == nil {
			var err error
			s, fw, err = l.open(q.proto)
			if err == nil {
				attempts = 0
				break
			}
			attempts++
			l.r.log.Debug("routing: cannot open stream", "peer", l.peer, "protocol", q.proto, "attempt", attempts, "err", err)
			if attempts >= 3 {
				// Give up on this message (an Ask learns why at once);
				// keep redialing for the ones behind it.
				l.fail(&e, fmt.Errorf("%w: %v: %w", ErrUnreachable, l.peer, err))
				e = actor.Envelope{}
				break
			}
			select {
			case <-time.After(backoff(attempts)):
			case <-l.r.ctx.Done():
				return
			}
		}
		if s == nil {
			continue
		}
		err := l.put(fw, &e)
		for err == nil && len(q.q) > 0 {
			e = <-q.q
			err = l.put(fw, &e)
		}
		if err == nil {
			_ = s.SetWriteDeadline(time.Now().Add(30 * time.Second))
			err = fw.Flush()
		}
		if err != nil {
			l.r.log.Debug("routing: stream broke", "peer", l.peer, "protocol", q.proto, "err", err)
			l.r.undeliverable.Add(uint64(max(fw.Buffered(), 1)))
			_ = s.Reset()
			s, fw = nil, nil
		}
	}
}

// put encodes e into fw. Errors about e itself (too large, unencodable)
// fail e and return nil; only stream errors are returned.
func (l *link) put(fw *codec.FrameWriter, e *actor.Envelope) error {
	if e.To.IsZero() {
		return nil
	}
	kind, typ, body, err := toWire(l.r.cfg.Registry, e)
	if err != nil {
		l.r.encodeErrors.Add(1)
		l.fail(e, err)
		return nil
	}
	env := codec.Envelope{Kind: kind, To: e.To.Name(), FromName: e.From.Name(), Type: typ, Body: body, Corr: e.Corr}
	err = fw.WriteEnvelope(&env)
	switch {
	case err == nil:
		l.r.sent.Add(1)
		return nil
	case errors.Is(err, codec.ErrFrameTooLarge):
		l.r.tooLarge.Add(1)
		l.fail(e, fmt.Errorf("%w: %v", ErrTooLarge, err))
		return nil
	case errors.Is(err, codec.ErrMalformed):
		l.r.encodeErrors.Add(1)
		l.fail(e, err)
		return nil
	}
	return err
}

// fail reports that e will not be sent: an Ask request is answered with
// Undeliverable so the asker fails fast.
func (l *link) fail(e *actor.Envelope, reason error) {
	l.r.log.Debug("routing: message not sent", "to", e.To, "err", reason)
	l.r.undeliverable.Add(1)
	if e.Corr != 0 && !e.Reply && !e.From.IsZero() {
		l.r.sys.Deliver(actor.Envelope{To: e.From, From: e.To, Msg: actor.Undeliverable{To: e.To, Reason: reason}, Corr: e.Corr, Reply: true})
	}
}

// open opens a stream to the peer and introduces this peer's incarnation.
func (l *link) open(proto protocol.ID) (network.Stream, *codec.FrameWriter, error) {
	ctx, cancel := context.WithTimeout(l.r.ctx, 10*time.Second)
	defer cancel()
	s, err := l.r.h.NewStream(ctx, l.peer, proto)
	if err != nil {
		return nil, nil, err
	}
	fw := codec.NewFrameWriter(s, l.r.cfg.MaxFrame)
	_, body, err := l.r.cfg.Registry.Encode(helloBody{Incarnation: l.r.incarnation})
	if err == nil {
		err = fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, Type: typeHello, Body: body})
	}
	if err != nil {
		_ = s.Reset()
		return nil, nil, err
	}
	return s, fw, nil
}
