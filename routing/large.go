package routing

import (
	"fmt"
	"log/slog"

	"github.com/troupe-mesh/troupe/codec"
)

// Large messages. A message whose encoded body is longer than fragmentData
// travels in fragments of at most fragmentData bytes, each a system message
// of type typeFragment, interleaved with the other messages on the stream:
// a large message does not hold up the messages of other actors queued
// behind it. Per-pair order is the writer's job: while a message from actor
// S to actor T goes out in fragments, later messages from S to T, and any
// other large message (with the messages of its pair behind it), wait in
// the writer until the last fragment is written, then go out in their queue
// order. So at most one large message per stream is in fragments at a time,
// and the reader reassembles one at a time. A message longer than the
// maximum frame is refused at the sender (ErrTooLarge), as before.
const (
	typeFragment = "troupe.fragment"
	// fragmentData is the most message bytes in one fragment: a fragment's
	// frame then fits one flush of the FrameWriter (one yamux frame), and
	// its encoding the writer's scratch buffer.
	fragmentData = 56 << 10
	// maxHeld is the most messages a writer holds back behind a large
	// message (fewer with a smaller link queue, see newPlanner): when that
	// many wait, it writes the rest of the large message at once. Held
	// messages have left the queue, so without a bound a sender that
	// keeps the queue busy with messages of the large message's pair
	// would grow the held list without end (and hold the large message
	// back).
	maxHeld = chunkSize
)

// fragmentBody is one fragment. The first of a message carries its type,
// whether it is a reply and its length; the others carry only data. The
// fragments' envelopes carry the message's To, From and Corr.
type fragmentBody struct {
	Type  string `cbor:"1,keyasint,omitempty"`
	Reply bool   `cbor:"2,keyasint,omitempty"`
	Total uint64 `cbor:"3,keyasint,omitempty"`
	Data  []byte `cbor:"4,keyasint"`
}

// errFragments marks a stream whose fragments do not add up: the reader
// resets it.
var errFragments = fmt.Errorf("%w: bad fragment sequence", codec.ErrMalformed)

// pair is a sender and target actor, by name, on one link.
type pair struct{ from, to string }

func pairOf(m *outMsg) pair { return pair{m.from, m.to} }

// largeOut is a writer's large message in progress and the messages held
// back behind it.
type largeOut struct {
	active bool
	env    codec.Envelope // of the fragments: To, FromName, Corr
	msg    any            // the message, handed back if the stream breaks
	typ    string
	reply  bool
	body   []byte
	off    int // bytes of body written
	since  int // bytes of other frames written since the last fragment
	pair   pair
	held   []outMsg
	pairs  map[pair]struct{} // pairs of held messages, and the large one's
	// released are the lists of messages release returned since the last
	// flush: they left the batch the writer took, and must be handed back
	// with it if the stream breaks.
	released [][]outMsg
}

// holds reports whether e must wait behind the large message in progress.
func (lg *largeOut) holds(m *outMsg) bool {
	if lg == nil || !lg.active {
		return false
	}
	_, ok := lg.pairs[pairOf(m)]
	return ok
}

// hold keeps m, and from now on every message of its pair, for later. m's
// target is cleared where it was: the held copy is the message now.
func (lg *largeOut) hold(m *outMsg) {
	lg.held = append(lg.held, *m)
	lg.pairs[pairOf(m)] = struct{}{}
	m.to = ""
}

// start makes m, whose encoded body is body, the large message in
// progress.
func (lg *largeOut) start(m *outMsg, kind codec.Kind, typ string, body []byte) {
	if lg.pairs == nil {
		lg.pairs = make(map[pair]struct{})
	}
	*lg = largeOut{
		active: true,
		env:    codec.Envelope{Kind: codec.KindSystem, To: m.to, FromName: m.from, Type: typeFragment, Corr: m.corr},
		msg:    m.msg,
		typ:    typ, reply: kind == codec.KindReply, body: body, pair: pairOf(m),
		held: lg.held[:0], pairs: lg.pairs, released: lg.released,
	}
	lg.pairs[lg.pair] = struct{}{}
	m.to = "" // lg holds the message now (see hold)
}

// release ends the large message and returns the held messages followed
// by rest, in order. When it returns a new list, the messages of rest move
// there: their targets are cleared in rest.
func (lg *largeOut) release(rest []outMsg) []outMsg {
	out := rest
	if len(lg.held) > 0 {
		out = append(append([]outMsg(nil), lg.held...), rest...)
		for i := range rest {
			rest[i].to = ""
		}
		lg.released = append(lg.released, out)
	}
	clear(lg.held)
	clear(lg.pairs)
	*lg = largeOut{held: lg.held[:0], pairs: lg.pairs, released: lg.released}
	return out
}

// complete ends the large message, whose last fragment was written, as
// release does. Until the next flush the message counts among those the
// writer has in hand: if the stream breaks before, it is handed back.
func (lg *largeOut) complete(rest []outMsg) []outMsg {
	lg.released = append(lg.released, []outMsg{lg.message()})
	return lg.release(rest)
}

// message is the large message in progress, as an outMsg.
func (lg *largeOut) message() outMsg {
	return outMsg{to: lg.env.To, from: lg.env.FromName, msg: lg.msg, corr: lg.env.Corr, reply: lg.reply}
}

// settle forgets the lists release returned: the writer flushed them.
func (lg *largeOut) settle() {
	if lg != nil && len(lg.released) > 0 {
		clear(lg.released)
		lg.released = lg.released[:0]
	}
}

// abandon drops, calling lost for each, the messages the writer holds
// apart from its batch (the stream broke): the large message, those held
// behind it and those released since the last flush.
func (lg *largeOut) abandon(lost func(*outMsg)) {
	if lg == nil {
		return
	}
	if lg.active {
		m := lg.message()
		lost(&m)
		for i := range lg.held {
			lost(&lg.held[i])
		}
	}
	for _, list := range lg.released {
		for i := range list {
			lost(&list[i])
		}
	}
	lg.release(nil)
	lg.settle()
}

// fragmentSize is the most message bytes in one fragment under a maximum
// frame of maxFrame: fragmentData, or less when the maximum frame leaves
// no room for a fragment's envelope around fragmentData bytes (only
// messages of more than fragmentData and at most maxFrame bytes go in
// fragments, so maxFrame is then above fragmentData).
func fragmentSize(maxFrame int) int { return min(fragmentData, maxFrame/2) }

// largeIn is a reader's large message being reassembled.
type largeIn struct {
	active bool
	env    codec.Envelope // To, FromName, Corr of the fragments; Kind and Type of the message
	total  int
	buf    []byte
	// skip: the message is over the node's maximum frame (its sender's is
	// larger) and was refused; its fragments are counted in skipped and
	// dropped.
	skip    bool
	skipped int
}

// fragStep is what a reader does with a fragment, as largeIn.next says.
type fragStep struct {
	began  bool // a new message began (inbound.larges counts them)
	refuse bool // that message is over the node's maximum frame: refuse it (tooLarge)
	drop   bool // the data is a refused message's: count it (drop), after refusing
	// keep says that the data is the reader's to keep (keep), after it
	// reserved reserve bytes more for the buffer; whole that the
	// message is complete then (whole).
	keep    bool
	reserve int
	whole   bool
}

// next applies fragment f, of envelope env, to lg, the message being
// reassembled, under a maximum frame of maxFrame: it checks that f adds
// up (an error wraps errFragments otherwise), starts a message on a
// first fragment and says what the reader does with the data. A first
// fragment over the maximum is refused even when its data does not add
// up. Pure: the data is counted only by drop and kept only by keep (so
// a refusal still sees the message when its first fragment is all of
// it).
func (lg *largeIn) next(env *codec.Envelope, f fragmentBody, maxFrame int) (fragStep, error) {
	var st fragStep
	first := f.Type != "" || f.Total != 0 || f.Reply
	switch {
	case first && lg.active:
		return st, fmt.Errorf("%w: a new message began before the last ended", errFragments)
	case !first && !lg.active:
		return st, fmt.Errorf("%w: a continuation without a first fragment", errFragments)
	case first && (f.Type == "" || f.Total == 0 || f.Total > codec.MaxFrameLimit):
		return st, fmt.Errorf("%w: first fragment of type %q and length %d (at most %d)", errFragments, f.Type, f.Total, codec.MaxFrameLimit)
	case first:
		kind := codec.KindUser
		if f.Reply {
			kind = codec.KindReply
		}
		*lg = largeIn{
			active: true, total: int(f.Total),
			env: codec.Envelope{Kind: kind, To: env.To, FromName: env.FromName, Type: f.Type, Corr: env.Corr},
		}
		lg.skip = lg.total > maxFrame
		st.began, st.refuse = true, lg.skip
	case env.To != lg.env.To || env.FromName != lg.env.FromName || env.Corr != lg.env.Corr:
		return st, fmt.Errorf("%w: a continuation for another message", errFragments)
	}
	have := len(lg.buf)
	if lg.skip {
		have = lg.skipped
	}
	switch {
	case len(f.Data) == 0: // a writer never sends one
		return st, fmt.Errorf("%w: an empty fragment", errFragments)
	case len(f.Data) > lg.total-have:
		return st, fmt.Errorf("%w: %d bytes more than the %d announced", errFragments, have+len(f.Data)-lg.total, lg.total)
	}
	if lg.skip {
		st.drop = true
		return st, nil
	}
	st.keep = true
	st.reserve = grownCap(lg.buf, len(f.Data), lg.total) - cap(lg.buf)
	st.whole = len(lg.buf)+len(f.Data) == lg.total
	return st, nil
}

// drop counts n bytes of a refused message, which next let through, and
// starts afresh after its last.
func (lg *largeIn) drop(n int) {
	if lg.skipped += n; lg.skipped == lg.total {
		*lg = largeIn{}
	}
}

// keep appends data, which next let through, to the message.
func (lg *largeIn) keep(data []byte) { lg.buf = appendGrow(lg.buf, data, lg.total) }

// whole returns the message keep completed, its body the buffer, and
// starts afresh.
func (lg *largeIn) whole() codec.Envelope {
	msg := lg.env
	msg.Body = lg.buf
	*lg = largeIn{}
	return msg
}

// fragment takes one fragment from env (largeIn.next). When it completes
// a message, it decodes it and dispatches it like any other. It returns
// errFragments when the sequence does not add up (the stream is then
// reset), or codec.ErrBufferRefused when the budget refuses the bytes.
func (in *inbound) fragment(env *codec.Envelope, f fragmentBody) error {
	lg := &in.large
	st, err := lg.next(env, f, in.r.cfg.MaxFrame)
	if st.began {
		in.larges++
	}
	if st.refuse {
		in.tooLarge(&lg.env, lg.total)
	}
	if st.drop {
		lg.drop(len(f.Data))
	}
	if err != nil || !st.keep {
		return err
	}
	if st.reserve > 0 && in.budget != nil {
		if err := in.budget.Reserve(st.reserve); err != nil {
			return fmt.Errorf("%w: %d bytes more for a large message: %w", codec.ErrBufferRefused, st.reserve, err)
		}
	}
	lg.keep(f.Data)
	if !st.whole {
		return nil
	}
	msg := lg.whole()
	if in.budget != nil { // the message is its actor's now, as any other
		in.budget.Release(cap(msg.Body))
	}
	v, err := in.r.cfg.Registry.Decode(msg.Type, msg.Body)
	if err != nil {
		in.r.decodeErrors.Add(1)
		in.r.logPeer(slog.LevelDebug, in.remote, "routing: undecodable large message", "type", msg.Type, "err", err)
		return nil
	}
	in.received++
	in.size = len(msg.Body)
	in.batchBytes += in.size
	in.dispatch(&msg, v)
	return nil
}

// appendGrow appends data to buf, which ends up at most total bytes long.
// It grows buf by doubling, up to total: a reader holds at most about
// twice what it received of a message, not what its first fragment
// announced (a peer that announces the maximum and stalls costs little).
func appendGrow(buf, data []byte, total int) []byte {
	if c := grownCap(buf, len(data), total); c > cap(buf) {
		nb := make([]byte, len(buf), c)
		copy(nb, buf)
		buf = nb
	}
	return append(buf, data...)
}

// grownCap is the capacity appendGrow gives buf for n more bytes.
func grownCap(buf []byte, n, total int) int {
	if need := len(buf) + n; need > cap(buf) {
		return min(total, max(2*cap(buf), need))
	}
	return cap(buf)
}

// isFragment reports whether env carries a fragment, decoded to v.
func isFragment(env *codec.Envelope, v any) (fragmentBody, bool) {
	f, ok := v.(fragmentBody)
	return f, ok && env.Kind == codec.KindSystem && env.Type == typeFragment
}
