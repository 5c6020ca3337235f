package routing

import (
	"errors"
	"fmt"
	"slices"

	"github.com/troupe-mesh/troupe/codec"
)

// The batch planner: what turns the messages a writer takes from its
// queue into frames (batches, fragments of large messages between the
// others, refusals). Its only IO is the codec.FrameWriter it is given
// (over any io.Writer; it flushes when the buffer fills), and it runs the
// messages' encoders; it holds no lock and calls neither the router nor
// the actor system: what it did, and which messages failed and why, it reports in
// planner.done, which the writer acts on (writer.took).

// planner is a writer's batch planner. Not safe for concurrent use: its
// only the holder of its writer's writing right uses it (linkstate.go).
type planner struct {
	reg      *codec.Registry
	maxFrame int
	heldMax  int    // the most messages held back behind a large one
	scratch  []byte // one message body at a time
	// floor: loss messages numbered floor or less are stale (the peer
	// left or restarted since: link.lossFloor) and are not written.
	floor uint64
	done  planned
}

// newPlanner returns the planner of a writer of a router configured by
// cfg. It holds back at most maxHeld messages behind a large one, and no
// more than the link queue holds, so that the messages a writer has
// taken but not written stay within twice the queue's bound and a stuck
// peer still fills the queue (link full, SendCtx waits).
func newPlanner(cfg config) planner {
	return planner{reg: cfg.Registry, maxFrame: cfg.MaxFrame, heldMax: min(maxHeld, cfg.LinkQueue)}
}

// planned is what a planner did since its owner last took it.
type planned struct {
	sent         uint64    // messages written (a large one with its last fragment)
	tooLarge     uint64    // messages refused as over the maximum frame
	encodeErrors uint64    // messages whose body could not be encoded
	failed       []failure // messages refused, and why, in order
}

// hasTraffic reports whether writing batch is traffic to the peer (see
// Router.asked): any user message, or a control message other than the
// router's own (isOwn).
func hasTraffic(batch []outMsg, user bool) bool {
	return user && len(batch) > 0 || !user && slices.ContainsFunc(batch, func(m outMsg) bool { return !isOwn(m.msg) })
}

// hasReset reports whether batch holds a resetBody still to send (see
// link.resetQueued).
func hasReset(batch []outMsg) bool {
	return slices.ContainsFunc(batch, func(m outMsg) bool { _, ok := m.msg.(resetBody); return ok && m.to != "" })
}

// fail records that m will not be sent, for reason, and clears its target
// (a later failure of its batch skips it). A loss message or a pause
// notice is the router's own: nothing is handed back.
func (p *planner) fail(m *outMsg, reason error) {
	if m.to == "" {
		return
	}
	if !isOwn(m.msg) {
		p.done.failed = append(p.done.failed, failure{*m, reason})
	}
	m.to = ""
}

// putBatch encodes the envelopes of batch into fw and returns the first
// stream error. user says that batch comes from the user queue, which
// holds no signals (see isControl). With lg (a 1.1.0 user stream), a
// large message goes out in fragments between the others, and what must
// wait behind it is held back (see large.go); a large message counts as
// sent with its last fragment.
func (p *planner) putBatch(fw *codec.FrameWriter, batch []outMsg, user bool, lg *largeOut) error {
	for len(batch) > 0 {
		m := &batch[0]
		batch = batch[1:]
		if lg.holds(m) {
			lg.hold(m)
		} else {
			ok, err := p.put(fw, m, user, lg)
			if err != nil {
				return err
			}
			if ok {
				p.done.sent++
			}
		}
		if lg == nil || !lg.active {
			continue
		}
		var (
			last bool
			err  error
		)
		switch {
		case len(lg.held) >= p.heldMax:
			for !last && err == nil { // the rest at once
				last, err = p.nextFragment(fw, lg)
			}
		case lg.since >= fragmentData:
			last, err = p.nextFragment(fw, lg)
		}
		if err != nil {
			return err
		}
		if last {
			p.done.sent++
			batch = lg.complete(batch)
		}
	}
	return nil
}

// idleFragment writes the next fragment of the large message lg when
// nothing else waits, and after the last one what was held back.
func (p *planner) idleFragment(fw *codec.FrameWriter, lg *largeOut) error {
	last, err := p.nextFragment(fw, lg)
	if err != nil || !last {
		return err
	}
	p.done.sent++
	return p.putBatch(fw, lg.complete(nil), true, lg)
}

// put encodes m into fw, encoding its body in scratch first, and reports
// whether it did. Errors about m itself (too large, unencodable) fail m and
// return a nil error; only stream errors are returned. user says that m is
// not a signal. With lg, a large m starts going out in fragments (put
// reports false: it counts when done) or, when another is on its way, is
// held back.
func (p *planner) put(fw *codec.FrameWriter, m *outMsg, user bool, lg *largeOut) (bool, error) {
	if m.to == "" {
		return false, nil
	}
	var (
		kind codec.Kind
		typ  string
		body []byte
		err  error
	)
	corr, loss := m.corr, false
	if user {
		kind, typ, body, err = appendUser(p.reg, p.scratch[:0], m.msg, m.reply)
	} else {
		if isLoss(m.msg) {
			if m.corr <= p.floor {
				return false, nil // stale: the peer left or restarted since
			}
			corr, loss = 0, true // m.corr numbers it here only
		}
		kind, typ, body, err = appendWire(p.reg, p.scratch[:0], m.msg, m.reply)
	}
	if cap(body) <= maxScratch {
		p.scratch = body
	}
	if err != nil {
		p.done.encodeErrors++
		p.fail(m, err)
		return false, nil
	}
	if len(body) > fragmentData && lg != nil {
		switch {
		case len(body) > p.maxFrame:
			p.done.tooLarge++
			p.fail(m, fmt.Errorf("%w: message of %d bytes exceeds limit of %d", ErrTooLarge, len(body), p.maxFrame))
			return false, nil
		case lg.active:
			lg.hold(m) // one large message at a time
			return false, nil
		}
		// The body must stay as it is while its fragments go out: the
		// scratch buffer starts anew.
		p.scratch = nil
		lg.start(m, kind, typ, body)
		_, err := p.nextFragment(fw, lg)
		return false, err
	}
	// Set field by field: a composite literal would be built aside and
	// copied in 16-byte moves, stalling on the 8-byte stores just made.
	var env codec.Envelope
	env.Kind, env.To, env.FromName, env.Type, env.Body, env.Corr = kind, m.to, m.from, typ, body, corr
	err = fw.WriteEnvelope(&env)
	switch {
	case err == nil && loss:
		return false, nil // not counted as sent, nor as traffic
	case err == nil:
		if lg != nil {
			lg.since += len(body)
		}
		return true, nil
	case errors.Is(err, codec.ErrFrameTooLarge):
		p.done.tooLarge++
		p.fail(m, fmt.Errorf("%w: %w", ErrTooLarge, err))
		return false, nil
	case errors.Is(err, codec.ErrMalformed):
		p.done.encodeErrors++
		p.fail(m, err)
		return false, nil
	}
	return false, err
}

// maxScratch is the largest body buffer a writer keeps between messages.
const maxScratch = 64 << 10

// nextFragment writes the next fragment of the large message and reports
// whether it was the last.
func (p *planner) nextFragment(fw *codec.FrameWriter, lg *largeOut) (bool, error) {
	end := min(lg.off+fragmentSize(p.maxFrame), len(lg.body))
	f := fragmentBody{Data: lg.body[lg.off:end]}
	if lg.off == 0 {
		f.Type, f.Reply, f.Total = lg.typ, lg.reply, uint64(len(lg.body))
	}
	_, body, err := p.reg.AppendEncode(p.scratch[:0], f)
	if err != nil {
		return false, err // cannot happen: the type is registered and plain
	}
	if cap(body) <= maxScratch {
		p.scratch = body
	}
	env := lg.env
	env.Body = body
	if err := fw.WriteEnvelope(&env); err != nil {
		return false, err
	}
	lg.off, lg.since = end, 0
	return end == len(lg.body), nil
}
