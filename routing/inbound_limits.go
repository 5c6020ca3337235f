package routing

import (
	"cmp"
	"errors"
	"net"
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
	node  *readerBudget // the node's, over all streams (reader_budget.go); nil: none
	src   readerSource  // the peer and source address it is charged to
	held  int
}

// budgetPriority is the share of a scope's memory limit that a stream
// reader may fill (204/256, about 80%): the rest stays for what libp2p itself needs,
// the muxer's window growth among them.
const budgetPriority = network.ReservationPriorityHigh

func (b *streamBudget) Reserve(n int) error {
	first := b.held == 0
	if b.node != nil {
		if err := b.node.reserve(b.src, int64(n), first); err != nil {
			return err
		}
	}
	if err := b.scope.ReserveMemory(n, budgetPriority); err != nil {
		if b.node != nil {
			b.node.release(b.src, int64(n), first)
		}
		return err
	}
	b.held += n
	return nil
}

func (b *streamBudget) Release(n int) {
	if n > 0 {
		b.scope.ReleaseMemory(n)
		b.held -= n
		if b.node != nil {
			b.node.release(b.src, int64(n), b.held == 0)
		}
	}
}

// stallGuard is an inbound stream as its FrameReader reads it: while the
// stream is in the middle of a frame or of a large message, each read
// waits at most stallTimeout for data, and the whole frame, or the whole
// large message, must come at wholeRate at least: the time this reader
// spends waiting for it is at most wholeBase + its size / wholeRate (the
// size its length prefix or first fragment announced). The other frames a
// writer interleaves with a large message's fragments earn it time too,
// as if they were its own, up to twice its size: a writer sends a
// fragment after at most one fragment's worth of other frames, so an
// honest message on a link at wholeRate, however busy, is on time. A
// peer that stops there, or trickles a byte now and then, does not keep
// what the frame or message holds (up to a maximum frame each) for
// longer; its stream is reset and counted (Stats.SlowStreams). Only the
// waits in Read count: while this reader is paused at its peer's budget,
// the peer is not the one being slow. Each frame and each large message
// has its own clock, however many follow one another without a pause
// between them. Between messages a stream may idle for ever.
type stallGuard struct {
	s     network.Stream
	in    *inbound
	fr    *codec.FrameReader
	armed bool      // a read deadline is set
	whole bool      // the deadline set is a frame's or message's, not the stall timeout
	read  int64     // bytes this guard returned: less fr.Pending, where the frame being read began
	frame unitClock // the frame being read
	large unitClock // the large message being reassembled
}

// unitClock is the time spent waiting for one frame or large message.
type unitClock struct {
	on     bool
	id     uint64 // which one: a frame's offset in the stream, a large message's number
	size   int
	read   int64 // bytes read while in it, its own and those interleaved
	waited time.Duration
}

// track starts, ends or goes on timing a unit (on: the reader is inside
// the unit id) of size bytes.
func (u *unitClock) track(on bool, id uint64, size int) {
	switch {
	case !on:
		*u = unitClock{}
	case !u.on || u.id != id:
		*u = unitClock{on: true, id: id, size: size}
	default:
		u.size = max(u.size, size)
	}
}

// left returns the time the unit may still take.
func (u *unitClock) left(t *timings) time.Duration {
	rate := cmp.Or(t.wholeRate, defaultWholeRate) // a Router a test built by hand
	credit := max(int64(u.size), min(u.read, 2*int64(u.size)))
	allowed := t.wholeBase + time.Duration(float64(credit)/float64(rate)*float64(time.Second))
	return max(allowed-u.waited, 0)
}

func (g *stallGuard) Read(p []byte) (int, error) {
	t := &g.in.r.cfg.timings
	g.frame.track(g.fr.Pending() > 0, uint64(g.read-int64(g.fr.Pending())), g.fr.PendingSize())
	g.large.track(g.in.large.active, g.in.larges, g.in.large.total)
	if !g.frame.on && !g.large.on {
		if g.armed {
			_ = g.s.SetReadDeadline(time.Time{})
			g.armed, g.whole = false, false
		}
		n, err := g.s.Read(p)
		g.read += int64(n)
		return n, err
	}
	wait, whole := t.stallTimeout, false
	for _, u := range [...]*unitClock{&g.frame, &g.large} {
		if l := u.left(t); u.on && l < wait {
			wait, whole = l, true
		}
	}
	start := time.Now()
	_ = g.s.SetReadDeadline(start.Add(wait))
	g.armed, g.whole = true, whole
	n, err := g.s.Read(p)
	waited := time.Since(start)
	g.read += int64(n)
	for _, u := range [...]*unitClock{&g.frame, &g.large} {
		u.waited += waited
		u.read += int64(n)
	}
	return n, err
}

// tooSlow reports whether err, a read's, is a frame's or a large
// message's deadline passing.
func (g *stallGuard) tooSlow(err error) bool {
	var ne net.Error
	return g.whole && errors.As(err, &ne) && ne.Timeout()
}
