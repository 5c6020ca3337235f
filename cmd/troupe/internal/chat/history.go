package chat

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// A late joiner's history: on entering a room, a user asks the room's
// members for their recent lines of it (the group broadcast, then each
// member that joins while the window is open), and shows the newest
// maxHistory of the answers, marked as history, once no member has been
// asked for historyQuiet (at most historyMax after entering).
//
// Every peer may be hostile, so a member answers only with its user's own
// lines (the ones this actor said, never what it heard; at most
// maxHistoryBytes of text, and each ask counts against the asking peer's
// line rate), and the asker
// shows each answer's lines under the nick of the actor that answered, as
// the nick-binding rules show that actor: no peer can make a line appear
// as another user's. An answer of more than maxHistory lines, of another
// room, a second answer of the same actor, or one outside a window is
// ignored; texts are cleaned and cut as live lines are; a time in the
// future is taken as now (a peer can only move its own lines).

// HistoryAsk asks a room's member for its user's recent lines there.
type HistoryAsk struct {
	Room string
}

// History answers a HistoryAsk: the user's own recent lines of
// Room, oldest first.
type History struct {
	Room  string
	Lines []Past
}

// Past is one line a user said: its sequence number among the user's
// lines, its time (Unix milliseconds, the sender's clock) and its text.
type Past struct {
	Seq  uint64
	Time int64
	Text string
}

const (
	maxHistory        = 50        // lines kept, answered and shown
	maxHistoryBytes   = 128 << 10 // text in one answer, at most
	maxHistoryAnswers = 256
	historyQuiet      = 2 * time.Second  // wait after the last ask
	historyMax        = 10 * time.Second // wait after entering the room, at most
)

// chatTime is how a chat line shows its time: HH:MM local, with the date
// when it is not the day of now.
func chatTime(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y != now.Year() || m != now.Month() || d != now.Day() {
		return t.Format("2006-01-02 15:04")
	}
	return t.Format("15:04")
}

// saidLine is a line the user said, kept to answer late joiners.
type saidLine struct {
	room string
	past Past
}

// saidLog holds the user's last maxHistory lines, of all rooms. Owned by
// the user's actor.
type saidLog struct {
	seq   uint64
	lines []saidLine
}

// add records a line said in room at t.
func (l *saidLog) add(room, text string, t time.Time) {
	l.seq++
	l.lines = append(l.lines, saidLine{room, Past{Seq: l.seq, Time: t.UnixMilli(), Text: text}})
	if len(l.lines) > maxHistory {
		l.lines = slices.Delete(l.lines, 0, len(l.lines)-maxHistory)
	}
}

// of returns the newest lines said in room whose texts fit in
// maxHistoryBytes, oldest first: what an answer holds, whoever asks.
func (l *saidLog) of(room string) []Past {
	var out []Past
	size := 0
	for _, s := range slices.Backward(l.lines) {
		if s.room != room {
			continue
		}
		if size += len(s.past.Text); size > maxHistoryBytes {
			break
		}
		out = append(out, s.past)
	}
	slices.Reverse(out)
	return out
}

// pastLine is a history line as accepted from an answer.
type pastLine struct {
	from actor.Ref
	nick string
	seq  uint64
	at   time.Time
	text string
}

// history is a late joiner's window: what it asked and the newest lines
// answered. Owned by the user's actor.
type history struct {
	room     string
	gen      int
	opened   time.Time
	deadline time.Time
	asked    map[actor.Ref]bool
	answered map[actor.Ref]bool
	lines    []pastLine // sorted by time, at most maxHistory
}

func newHistory(room string, gen int, now time.Time) *history {
	return &history{room: room, gen: gen, opened: now, deadline: now.Add(historyQuiet),
		asked: map[actor.Ref]bool{}, answered: map[actor.Ref]bool{}}
}

// ask reports whether member is to be asked now (not yet asked, room for
// more), and records it and moves the deadline if so.
func (h *history) ask(member actor.Ref, now time.Time) bool {
	if h.asked[member] || len(h.asked) >= maxHistoryAnswers {
		return false
	}
	h.asked[member] = true
	h.deadline = minTime(now.Add(historyQuiet), h.opened.Add(historyMax))
	return true
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// add takes the answer of the actor from, whose user is nick, or returns
// why it does not (see the rules at the top of the file).
func (h *history) add(from actor.Ref, nick string, ans History, now time.Time) error {
	switch {
	case ans.Room != h.room:
		return fmt.Errorf("history of #%s, not of #%s", cli.Clean(ans.Room), h.room)
	case len(ans.Lines) > maxHistory:
		return fmt.Errorf("%d lines of history, more than %d", len(ans.Lines), maxHistory)
	case h.answered[from]:
		return fmt.Errorf("a second answer")
	case len(h.answered) >= maxHistoryAnswers:
		return fmt.Errorf("more than %d answers", maxHistoryAnswers)
	}
	h.answered[from] = true
	seen := map[uint64]bool{}
	for _, p := range ans.Lines {
		if seen[p.Seq] {
			continue
		}
		seen[p.Seq] = true
		at := time.UnixMilli(p.Time)
		if at.After(now) {
			at = now
		}
		h.lines = append(h.lines, pastLine{from: from, nick: nick, seq: p.Seq, at: at, text: cli.Clean(p.Text)})
	}
	slices.SortStableFunc(h.lines, func(a, b pastLine) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.from.String(), b.from.String()), cmp.Compare(a.seq, b.seq))
	})
	if len(h.lines) > maxHistory {
		h.lines = slices.Delete(h.lines, 0, len(h.lines)-maxHistory)
	}
	return nil
}

// render returns the lines to print: a start marker, the history lines
// with each sender shown by show, and an end marker; nothing when no line
// was answered.
func (h *history) render(show func(nick string, from actor.Ref) string, now time.Time) []string {
	if len(h.lines) == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("* history of #%s: the last %d %s of the users present", h.room, len(h.lines), plural(len(h.lines), "line"))}
	for _, l := range h.lines {
		out = append(out, fmt.Sprintf("history %s [#%s] <%s> %s", chatTime(l.at, now), h.room, show(l.nick, l.from), l.text))
	}
	return append(out, "* end of history")
}

// historyDue tells the user's actor that window gen may be due.
type historyDue struct{ gen int }

// own reports whether ref is this user's actor or its previous one (or
// no actor).
func (st *chatState) own(c *actor.Context, ref actor.Ref) bool {
	return ref.IsZero() || ref == c.Self() || ref == st.prev || ref == st.former
}

// openHistory opens a window for the current room and asks the room.
func (st *chatState) openHistory(c *actor.Context) {
	st.histGen++
	st.hist = newHistory(st.room, st.histGen, st.s.now())
	_ = group.Broadcast(c, chatGroupPrefix+st.room, HistoryAsk{Room: st.room})
	st.armHistory(c)
}

// armHistory (re)starts the timer of the open window for its deadline.
func (st *chatState) armHistory(c *actor.Context) {
	if st.histTimer != nil {
		st.histTimer.Stop()
	}
	self, sys, gen := c.Self(), c.System(), st.hist.gen
	st.histTimer = time.AfterFunc(st.hist.deadline.Sub(st.s.now()), func() { sys.Send(self, historyDue{gen}) })
}

// takeHistory takes an answer from a member of the room while a window is
// open; anything wrong with it (see the top of the file) drops it.
func (st *chatState) takeHistory(c *actor.Context, m History) {
	from := c.Sender()
	nick, ok := strings.CutPrefix(from.Name(), chatActorPrefix)
	if st.hist == nil || !ok || CheckName("nick", nick) != nil || st.own(c, from) || !st.s.limit.allow(from.Peer()) {
		return
	}
	_ = st.hist.add(from, nick, m, st.s.now())
}

// closeHistory shows what the open window collected and closes it.
func (st *chatState) closeHistory() {
	show := func(nick string, from actor.Ref) string {
		if _, member := st.members[from]; member {
			return st.s.nicks.show(nick, from.Peer()) // seen in the room
		}
		return st.s.nicks.label(nick, from.Peer())
	}
	for _, l := range st.hist.render(show, st.s.now()) {
		st.s.printf("%s", l)
	}
	st.stopHistory()
}

// stopHistory closes the open window, if any, showing nothing.
func (st *chatState) stopHistory() {
	if st.histTimer != nil {
		st.histTimer.Stop()
	}
	st.hist, st.histTimer = nil, nil
}
