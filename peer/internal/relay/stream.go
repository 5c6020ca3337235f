package relay

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"google.golang.org/protobuf/proto"
)

// A relayStream is one end of a relay's circuit as go-libp2p's relay
// sees it (limits.go): the hop stream from the circuit's source, or
// the stop stream to its destination. It reads the first message of the
// hop stream as the relay does (the relay reads it unbuffered, so the
// bytes it reads are the message), to learn the circuit's destination;
// it rewrites the first message the relay writes on either (the hop's
// status, the stop's connect, each one length-prefixed protobuf) to carry
// the circuit's limit; and from then on it enforces a stranger circuit's
// limit: a deadline for the whole circuit (the relay's own deadlines are
// kept when earlier) and an end of stream once the data cap is read, as
// go-libp2p's limited relay does.

// relayMsgMax is the largest circuit message (go-libp2p's relay reads at
// most 4 KiB), with room for its length.
const relayMsgMax = 4096 + binary.MaxVarintLen64

type relayStream struct {
	network.Stream
	h   *relayHost
	hop bool // the hop stream from the source; else the stop stream to the destination

	mu      sync.Mutex // guards what follows; never held across the stream's I/O
	rHead   []byte     // hop: what was read of the first message, until parsed
	parsed  bool       // hop: the first message was read (limit decided if it asked for one)
	wHead   []byte     // the first message written, until complete
	written bool       // the first message went out (rewritten or not)
	decided bool       // limit holds the circuit's (or reservation's) limit
	limit   *relayv2.RelayLimit
	started bool      // the circuit runs: limits enforced from here on
	end     time.Time // a stranger circuit's deadline; zero for none
	left    int64     // data this end may still read, if limited
	cut     bool      // counted as cut already
	rd, wd  time.Time // deadlines the relay asked for
}

func newRelayStream(s network.Stream, h *relayHost, hop bool) *relayStream {
	return &relayStream{Stream: s, h: h, hop: hop}
}

// Read reads what the relay relays from this end, at most the data a
// stranger circuit has left (then the end of stream); on the hop stream,
// the first message is read along to learn the circuit's destination.
func (s *relayStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	if s.started && s.limit != nil {
		if s.left <= 0 {
			s.countCutLocked()
			s.mu.Unlock()
			_ = s.Stream.CloseRead() // discard the rest, as libp2p's relay does
			return 0, io.EOF
		}
		p = p[:min(int64(len(p)), s.left)]
	}
	s.mu.Unlock()
	n, err := s.Stream.Read(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started && s.limit != nil {
		s.left -= int64(n)
		if err != nil && err != io.EOF && !time.Now().Before(s.end) { // the circuit's deadline (yamux's error is its own)
			s.countCutLocked()
		}
	}
	if s.hop && !s.parsed && n > 0 {
		s.rHead = append(s.rHead, p[:n]...)
		if msg, ok, bad := frame(s.rHead); bad {
			s.parsed, s.rHead = true, nil // the relay refuses it too
		} else if ok {
			s.parsed, s.rHead = true, nil
			s.decideHopLocked(msg)
		}
	}
	return n, err
}

// decideHopLocked decides the limit from the hop stream's first message:
// a reservation's by its peer, a connect's by both ends.
func (s *relayStream) decideHopLocked(b []byte) {
	var m pbv2.HopMessage
	if proto.Unmarshal(b, &m) != nil {
		return
	}
	src := s.Conn().RemotePeer()
	switch m.GetType() {
	case pbv2.HopMessage_RESERVE:
		s.limit, s.decided = s.h.pol.limit(src, src), true
	case pbv2.HopMessage_CONNECT:
		dst, err := libp2ppeer.IDFromBytes(m.GetPeer().GetId())
		if err != nil {
			return // malformed: the relay refuses it
		}
		s.limit, s.decided = s.h.pol.limit(src, dst), true
	}
}

// Write writes what the relay relays to this end; the first message is
// held until complete and written with the circuit's limit.
func (s *relayStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.written {
		s.mu.Unlock()
		return s.Stream.Write(p)
	}
	s.wHead = append(s.wHead, p...)
	msg, ok, bad := frame(s.wHead)
	if !ok && !bad {
		s.mu.Unlock()
		return len(p), nil // the rest of the message comes next
	}
	out := s.wHead
	if ok {
		out = s.rewriteLocked(msg, rest(out))
	}
	s.written, s.wHead = true, nil
	s.mu.Unlock()
	if _, err := s.Stream.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rest returns what follows the first message of b (b holds a whole one).
func rest(b []byte) []byte {
	n, k := binary.Uvarint(b)
	return b[k+int(n):]
}

// rewriteLocked returns the first message msg (tail after it) with the
// circuit's limit, and starts the circuit's limits when it is the hop's
// connect answer or the stop's connect. Anything else goes out as it was.
func (s *relayStream) rewriteLocked(msg, tail []byte) []byte {
	var m proto.Message
	if s.hop {
		var hm pbv2.HopMessage
		if proto.Unmarshal(msg, &hm) != nil || hm.GetType() != pbv2.HopMessage_STATUS || hm.GetStatus() != pbv2.Status_OK {
			return append(delimit(msg), tail...)
		}
		if !s.decided { // the relay accepted what this end could not read: a stranger's, never none
			l := s.h.pol.stranger
			s.limit, s.decided = &l, true
		}
		hm.Limit = limitMsg(s.limit)
		if hm.Reservation == nil { // a connect's answer: the circuit runs
			s.startLocked()
		}
		m = &hm
	} else {
		var sm pbv2.StopMessage
		if proto.Unmarshal(msg, &sm) != nil || sm.GetType() != pbv2.StopMessage_CONNECT {
			return append(delimit(msg), tail...)
		}
		src, err := libp2ppeer.IDFromBytes(sm.GetPeer().GetId())
		if err != nil {
			return append(delimit(msg), tail...)
		}
		s.limit, s.decided = s.h.pol.limit(src, s.Conn().RemotePeer()), true
		sm.Limit = limitMsg(s.limit)
		s.startLocked()
		m = &sm
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return append(delimit(msg), tail...)
	}
	return append(delimit(b), tail...)
}

// startLocked starts the circuit's limits at this end.
func (s *relayStream) startLocked() {
	s.started = true
	if s.limit == nil {
		if s.hop {
			s.h.metrics.members.Add(1)
		}
		return
	}
	s.end, s.left = time.Now().Add(s.limit.Duration), s.limit.Data
	s.applyLocked()
}

// countCutLocked counts this end cut at its limit, once.
func (s *relayStream) countCutLocked() {
	if !s.cut {
		s.cut = true
		s.h.metrics.cut.Add(1)
	}
}

// SetDeadline implements network.Stream: the relay's deadline, or the
// circuit's when earlier.
func (s *relayStream) SetDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rd, s.wd = t, t
	return s.applyLocked()
}

// SetReadDeadline implements network.Stream, as SetDeadline.
func (s *relayStream) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rd = t
	return s.applyLocked()
}

// SetWriteDeadline implements network.Stream, as SetDeadline.
func (s *relayStream) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wd = t
	return s.applyLocked()
}

// applyLocked sets the stream's deadlines: the relay's, or the circuit's
// end when earlier.
func (s *relayStream) applyLocked() error {
	return errors.Join(s.Stream.SetReadDeadline(earliest(s.rd, s.end)), s.Stream.SetWriteDeadline(earliest(s.wd, s.end)))
}

// earliest returns the earlier of two deadlines, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// frame returns the first length-prefixed message of b: ok when b holds
// all of it, bad when b cannot start one (a bad length, or larger than a
// circuit message may be).
func frame(b []byte) (msg []byte, ok, bad bool) {
	n, k := binary.Uvarint(b)
	switch {
	case k < 0 || k == 0 && len(b) >= binary.MaxVarintLen64:
		return nil, false, true
	case k == 0:
		return nil, false, len(b) > relayMsgMax
	case n > relayMsgMax:
		return nil, false, true
	case uint64(len(b)-k) < n:
		return nil, false, false
	}
	return b[k : k+int(n)], true, false
}

// delimit returns msg with its length in front.
func delimit(msg []byte) []byte {
	return append(binary.AppendUvarint(make([]byte, 0, len(msg)+binary.MaxVarintLen64), uint64(len(msg))), msg...)
}
