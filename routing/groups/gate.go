package groups

import "time"

// announceGap spaces the announcements of a group's members that grafts
// and questions (typeWho) ask for. Without it, a hundred peers joining a
// group together each answered every other's question and every graft of
// the forming mesh with a broadcast: tens of thousands of deliveries a
// second, which filled GossipSub's queues on two cores until it dropped
// the mesh's other traffic (BenchmarkScale100).
const announceGap = time.Second

// announceGate decides when a group's members are announced: at once when
// the last announcement is announceGap old or more, else once at the end
// of the gap, however many asked meanwhile. It is a pure core, owned by
// the publisher goroutine.
type announceGate struct {
	gap     time.Duration
	last    map[string]time.Time // a group's last announcement, within the gap
	pending map[string]bool      // groups asked for within their gap
}

func newAnnounceGate(gap time.Duration) *announceGate {
	return &announceGate{gap: gap, last: make(map[string]time.Time), pending: make(map[string]bool)}
}

// ask reports whether group is announced now; if not, it is pending
// until due returns it.
func (a *announceGate) ask(group string, now time.Time) bool {
	if t, ok := a.last[group]; ok && now.Sub(t) < a.gap {
		a.pending[group] = true
		return false
	}
	a.last[group] = now
	return true
}

// due returns the pending groups whose gap ended by now, as announced now,
// and forgets the announcements older than the gap.
func (a *announceGate) due(now time.Time) []string {
	var out []string
	for group := range a.pending {
		if now.Sub(a.last[group]) >= a.gap {
			delete(a.pending, group)
			a.last[group] = now
			out = append(out, group)
		}
	}
	for group, t := range a.last {
		if !a.pending[group] && now.Sub(t) >= a.gap {
			delete(a.last, group)
		}
	}
	return out
}

// next returns when the first pending announcement is due, and false when
// none is pending.
func (a *announceGate) next() (time.Time, bool) {
	var first time.Time
	for group := range a.pending {
		if at := a.last[group].Add(a.gap); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}
