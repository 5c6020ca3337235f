package routing

// What a writer leaves for later (see the lock order in router.go):
// messages to hand back to the actor system, losses it declared, and its
// link to retire. It collects them as it writes, where the planner and
// the queue's lock may be in use, and runs them (link.perform) between
// rounds, or a write-through once it handed its writing right back.

// failure is a message that will not be sent, or may not have arrived,
// and why.
type failure struct {
	m      outMsg
	reason error
}

// effects are a writer's calls into the router and the actor system,
// held until it is between rounds; perform runs them in this order.
type effects struct {
	failed      []failure
	losses      []declared
	unreachable bool // messages were given up as unreachable: retireLater
}

// declared is a loss a writer declared as it wrote: numbered s
// (link.drawLoss), for why; its lostBody is queued at the end of the
// control queue (push) or is first among the control writer's
// cancellations already.
type declared struct {
	s    uint64
	why  string
	push bool
}

func (fx *effects) empty() bool {
	return len(fx.failed) == 0 && len(fx.losses) == 0 && !fx.unreachable
}

// fail collects m, which will not be sent or may not have arrived, to
// be handed back (see link.bounce). A loss message or a pause notice is
// the router's own:
// it is dropped at once, and nothing is handed back. m's target is
// cleared: a later failure of its batch skips it.
func (fx *effects) fail(l *link, m *outMsg, reason error) {
	if isOwn(m.msg) {
		l.dropLoss(m)
		m.to = ""
	}
	if m.to == "" {
		return
	}
	fx.failed = append(fx.failed, failure{*m, reason})
	m.to = ""
}

// perform runs fx and empties it. No lock may be held.
func (l *link) perform(fx *effects) {
	for i := range fx.failed {
		l.bounce(&fx.failed[i].m, fx.failed[i].reason)
	}
	for _, d := range fx.losses {
		l.r.lossDeclared(l, d.s, d.why, false, d.push)
	}
	if fx.unreachable {
		l.r.retireLater(l.peer)
	}
	clear(fx.failed)
	clear(fx.losses)
	*fx = effects{failed: fx.failed[:0], losses: fx.losses[:0]}
}

// release runs what the writer collected (w.later). The writing right's
// holder calls it, holding no lock; their emptied slices come back for
// reuse.
func (w *writer) release() {
	if w.later.empty() {
		return
	}
	fx := w.later
	w.later = effects{}
	w.l.perform(&fx)
	if w.later.empty() && cap(w.later.failed) == 0 && cap(w.later.losses) == 0 {
		w.later = fx // emptied by perform: its slices are reused
	}
}
