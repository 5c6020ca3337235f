package latency

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// Ping streams. A ping on a new stream costs some 920 bytes of IP
// traffic (the stream's opening and closing, multistream's negotiation,
// the muxer's window updates, and their packets); on a stream kept open
// it is one 32-byte frame each way. The prober keeps a peer's ping
// stream between its pings while the next is due before the other side
// gives up on it: libp2p's ping service resets a stream idle for 10 s,
// so a stream idle for pingReuse is reset here and the next ping opens
// a new one (the peers pinged every 30 s do so each time). The streams
// are bounded by the connected peers, one each.

// pingReuse is how long a ping stream may sit idle and still be used.
const pingReuse = 8 * time.Second

// pingStreams holds the idle ping streams, one per peer at most. Its
// mutex guards idle (a leaf lock); a stream taken out is its pinger's
// alone until put back.
type pingStreams struct {
	mu   sync.Mutex
	idle map[libp2ppeer.ID]idleStream
}

type idleStream struct {
	s    network.Stream
	used time.Time // when its last ping was answered
}

func newPingStreams() *pingStreams {
	return &pingStreams{idle: map[libp2ppeer.ID]idleStream{}}
}

// ping pings id once within timeout on an existing connection (a probe
// never dials), on its idle stream if it has one fresh enough, and
// records the round trip in the peerstore. Safe for concurrent use, one
// ping per peer at a time.
func (ps *pingStreams) ping(ctx context.Context, h host.Host, id libp2ppeer.ID, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := ps.take(id, time.Now())
	if s == nil {
		var err error
		if s, err = h.NewStream(network.WithNoDial(ctx, "latency probe"), id, ping.ID); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	rtt, err := pingRound(s)
	if !stop() { // the timeout, or the prober's close, reset it
		return errNoPong
	}
	if err != nil {
		_ = s.Reset()
		return err
	}
	h.Peerstore().RecordLatency(id, rtt)
	ps.put(id, s, time.Now())
	return nil
}

// pingRound sends one ping on s and reads its echo.
func pingRound(s network.Stream) (time.Duration, error) {
	var out, in [ping.PingSize]byte
	if _, err := rand.Read(out[:]); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := s.Write(out[:]); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(s, in[:]); err != nil {
		return 0, err
	}
	if !bytes.Equal(in[:], out[:]) {
		return 0, errBadPong
	}
	return time.Since(start), nil
}

// take removes id's idle stream and returns it if it was used within
// pingReuse of now (it resets an older one), or nil.
func (ps *pingStreams) take(id libp2ppeer.ID, now time.Time) network.Stream {
	ps.mu.Lock()
	is, ok := ps.idle[id]
	delete(ps.idle, id)
	ps.mu.Unlock()
	switch {
	case !ok:
		return nil
	case now.Sub(is.used) >= pingReuse:
		_ = is.s.Reset()
		return nil
	}
	return is.s
}

func (ps *pingStreams) put(id libp2ppeer.ID, s network.Stream, now time.Time) {
	ps.mu.Lock()
	old, ok := ps.idle[id]
	ps.idle[id] = idleStream{s: s, used: now}
	ps.mu.Unlock()
	if ok { // not while each peer has one ping out at most
		_ = old.s.Reset()
	}
}

// prune resets the idle streams of the peers not in state, and those
// idle for pingReuse.
func (ps *pingStreams) prune(state map[libp2ppeer.ID]*probeState, now time.Time) {
	ps.mu.Lock()
	var drop []network.Stream
	for id, is := range ps.idle {
		if _, ok := state[id]; !ok || now.Sub(is.used) >= pingReuse {
			drop = append(drop, is.s)
			delete(ps.idle, id)
		}
	}
	ps.mu.Unlock()
	for _, s := range drop {
		_ = s.Reset()
	}
}

// close resets every idle stream.
func (ps *pingStreams) close() { ps.prune(nil, time.Time{}) }
