package routing

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/codec"
)

// What bounds one stream's reader besides its peer's budget: the memory
// of frames and large messages being received (streamBudget, in the
// stream's libp2p scope) and how long it may stall inside one.

// streamBudget charges what an inbound stream's reader holds beyond its
// first buffer (a large frame, a large message being reassembled) to the
// libp2p resource manager, in the stream's scope: the limits of the
// stream, of the peer on the protocol, of the peer, of the protocol and
// of the whole host all apply (peer.Limits.Memory among them). What a
// limit refuses resets the stream, as garbage does: a peer cannot make a
// node hold more for messages it has not finished sending than the
// resource manager allows. (A whole message is its actor's, in a mailbox,
// and no longer charged.)
type streamBudget struct {
	scope network.StreamScope
	held  int
}

// budgetPriority is the share of a scope's memory limit that a stream
// reader may fill (204/256, about 80%): the rest stays for what libp2p itself needs,
// the muxer's window growth among them.
const budgetPriority = network.ReservationPriorityHigh

func (b *streamBudget) Reserve(n int) error {
	if err := b.scope.ReserveMemory(n, budgetPriority); err != nil {
		return err
	}
	b.held += n
	return nil
}

func (b *streamBudget) Release(n int) {
	if n > 0 {
		b.scope.ReleaseMemory(n)
		b.held -= n
	}
}

// stallGuard is an inbound stream as its FrameReader reads it: while the
// stream is in the middle of a frame or of a large message, each read
// waits at most stallTimeout for data, so that a peer that stops there
// does not keep what the frame or message holds (up to a maximum frame
// each) for as long as the connection lives. Between messages a stream may
// idle for ever.
type stallGuard struct {
	s     network.Stream
	in    *inbound
	fr    *codec.FrameReader
	armed bool // a read deadline is set
}

func (g *stallGuard) Read(p []byte) (int, error) {
	if g.fr.Pending() > 0 || g.in.large.active {
		_ = g.s.SetReadDeadline(time.Now().Add(g.in.r.cfg.timings.stallTimeout))
		g.armed = true
	} else if g.armed {
		_ = g.s.SetReadDeadline(time.Time{})
		g.armed = false
	}
	return g.s.Read(p)
}
