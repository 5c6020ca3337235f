package routing

import (
	"context"
	"errors"
	"io"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// handleStream reads frames from one inbound stream and hands the messages
// to the local actors: this is what wakes their receive continuations.
// Decoding happens here, on the stream's goroutine. A frame with bad
// contents is counted and skipped; a stream that lost sync (bad length,
// oversize frame, truncated frame) is counted and reset.
func (r *Router) handleStream(s network.Stream) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = s.Reset()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	stop := context.AfterFunc(r.ctx, func() { _ = s.Reset() })
	defer stop()

	remote := s.Conn().RemotePeer()
	remoteStr := remote.String()
	fr := codec.NewFrameReader(s, r.cfg.MaxFrame)
	var env codec.Envelope
	var refs refCache
	for {
		err := fr.ReadEnvelope(&env)
		if errors.Is(err, io.EOF) {
			_ = s.Close()
			return
		}
		if err != nil {
			if r.ctx.Err() != nil || !isCodecError(err) {
				_ = s.Reset() // closing, or the stream or connection died
				return
			}
			r.decodeErrors.Add(1)
			if fr.Err() != nil {
				r.streamsReset.Add(1)
				r.log.Warn("routing: resetting inbound stream", "peer", remote, "protocol", s.Protocol(), "err", err)
				_ = s.Reset()
				return
			}
			r.log.Debug("routing: skipping bad frame", "peer", remote, "err", err)
			continue
		}
		r.received.Add(1)
		r.dispatch(remote, remoteStr, &env, &refs)
	}
}

// refCache remembers the last target and sender of a stream: consecutive
// frames mostly repeat them, and building a Ref validates its name.
type refCache struct {
	to, from actor.Ref
}

func cachedRef(last *actor.Ref, peer, name string) (actor.Ref, error) {
	if last.Name() == name && last.Peer() == peer && name != "" {
		return *last, nil
	}
	ref, err := actor.NewRef(peer, name)
	if err == nil {
		*last = ref
	}
	return ref, err
}

// isCodecError reports whether err is about the bytes received rather
// than the transport.
func isCodecError(err error) bool {
	return errors.Is(err, codec.ErrMalformed) || errors.Is(err, codec.ErrFrameTooLarge) || errors.Is(err, codec.ErrUnknownKind)
}

func (r *Router) dispatch(remote libp2ppeer.ID, remoteStr string, env *codec.Envelope, refs *refCache) {
	msg, reply, err := fromWire(r.cfg.Registry, env)
	if err != nil {
		r.decodeErrors.Add(1)
		r.log.Debug("routing: undecodable message", "peer", remote, "type", env.Type, "err", err)
		return
	}
	if h, ok := msg.(helloBody); ok {
		r.hello(remote, h.Incarnation)
		return
	}
	to, err := cachedRef(&refs.to, r.sys.Peer(), env.To)
	if err != nil {
		r.decodeErrors.Add(1)
		return
	}
	var from actor.Ref
	if env.FromName != "" {
		if from, err = cachedRef(&refs.from, remoteStr, env.FromName); err != nil {
			r.decodeErrors.Add(1)
			return
		}
	}
	r.sys.Deliver(actor.Envelope{To: to, From: from, Msg: msg, Corr: env.Corr, Reply: reply})
}
