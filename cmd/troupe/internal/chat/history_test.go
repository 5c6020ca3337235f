package chat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

func TestChatTimeIsLocalHHMM(t *testing.T) {
	now := time.Date(2026, 12, 6, 21, 30, 0, 0, time.Local)
	if got := chatTime(now.Add(-5*time.Minute), now); got != "21:25" {
		t.Fatalf("a time of today: %q, want 21:25", got)
	}
	if got := chatTime(now.Add(-24*time.Hour), now); got != "2026-12-05 21:30" {
		t.Fatalf("a time of yesterday: %q, want the date too", got)
	}
	s := &chatSession{now: func() time.Time { return now }}
	if got := s.clock(); got != "21:30" {
		t.Fatalf("the session's clock: %q", got)
	}
}

func TestSaidLogBounded(t *testing.T) {
	var l saidLog
	t0 := time.Unix(1000, 0)
	for i := range maxHistory + 10 {
		room := "lobby"
		if i%2 == 1 {
			room = "side"
		}
		l.add(room, fmt.Sprint("line ", i), t0.Add(time.Duration(i)*time.Second))
	}
	if len(l.lines) != maxHistory {
		t.Fatalf("kept %d lines, want %d", len(l.lines), maxHistory)
	}
	got := l.of("side")
	if len(got) != maxHistory/2 || got[0].Text != "line 11" || got[len(got)-1].Text != "line 59" || got[len(got)-1].Seq != 60 {
		t.Fatalf("lines of #side: %d, first %+v, last %+v", len(got), got[0], got[len(got)-1])
	}
}

func past(seq uint64, t time.Time, text string) Past {
	return Past{Seq: seq, Time: t.UnixMilli(), Text: text}
}

// TestHistoryMergesAndBounds: answers of several users are merged in time
// order, deduplicated, cleaned and cut to the newest maxHistory lines;
// an answer of another room, an oversized one and a second one from the
// same actor are refused.
func TestHistoryMergesAndBounds(t *testing.T) {
	now := time.Unix(10000, 0)
	h := newHistory("lobby", 1, now)
	bob, carol := chatRef(t, bobPeer, "bob"), chatRef(t, localPeer, "carol")
	if err := h.add(bob, "bob", History{Room: "lobby", Lines: []Past{
		past(1, now.Add(-3*time.Minute), "b1"),
		past(1, now.Add(-3*time.Minute), "b1 again"), // same seq: once
		past(2, now.Add(-1*time.Minute), "b2 \x1b[31mred"),
		past(3, now.Add(time.Hour), "from the future"),
	}}, now); err != nil {
		t.Fatal(err)
	}
	if err := h.add(carol, "carol", History{Room: "lobby", Lines: []Past{past(1, now.Add(-2*time.Minute), "c1")}}, now); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range h.lines {
		got = append(got, l.nick+":"+l.text)
	}
	if want := "bob:b1 carol:c1 bob:b2  [31mred bob:from the future"; strings.Join(got, " ") != want {
		t.Fatalf("merged %q, want %q", strings.Join(got, " "), want)
	}
	if !h.lines[3].at.Equal(now) {
		t.Fatalf("a future time was kept: %v", h.lines[3].at)
	}
	for _, c := range []struct {
		name string
		from actor.Ref
		ans  History
	}{
		{"another room", chatRef(t, impostorPeer, "x"), History{Room: "side", Lines: []Past{past(1, now, "x")}}},
		{"oversized", chatRef(t, impostorPeer, "y"), History{Room: "lobby", Lines: make([]Past, maxHistory+1)}},
		{"second answer", bob, History{Room: "lobby", Lines: []Past{past(9, now, "again")}}},
	} {
		if err := h.add(c.from, "z", c.ans, now); err == nil {
			t.Fatalf("%s: accepted", c.name)
		}
	}
	if len(h.lines) != 4 {
		t.Fatalf("a refused answer changed the history: %d lines", len(h.lines))
	}
	// Many users: the newest maxHistory lines are kept.
	for i := range 3 {
		from := chatRef(t, fmt.Sprintf("12D3KooWMany%dXXXXXX", i), fmt.Sprint("u", i))
		lines := make([]Past, maxHistory)
		for j := range lines {
			lines[j] = past(uint64(j+1), now.Add(-time.Duration(j*3+i)*time.Second), "many")
		}
		if err := h.add(from, fmt.Sprint("u", i), History{Room: "lobby", Lines: lines}, now); err != nil {
			t.Fatal(err)
		}
	}
	if len(h.lines) != maxHistory || !h.lines[maxHistory-1].at.Equal(now) || h.lines[0].at.Before(now.Add(-time.Duration(maxHistory)*time.Second)) {
		t.Fatalf("after many answers: %d lines, from %v to %v", len(h.lines), h.lines[0].at, h.lines[len(h.lines)-1].at)
	}
}

// TestHistoryShownAsItsSender: a history line is shown under the nick of
// the actor that answered, as the nick book shows it: an impostor's
// chat-bob is bob@tail, and no answer can name another user; the output
// is marked as history.
func TestHistoryShownAsItsSender(t *testing.T) {
	now := time.Date(2026, 12, 6, 21, 30, 0, 0, time.Local)
	var b nickBook
	b.show("bob", bobPeer)
	h := newHistory("lobby", 1, now)
	bob, fake := chatRef(t, bobPeer, "bob"), chatRef(t, impostorPeer, "bob")
	if err := h.add(bob, "bob", History{Room: "lobby", Lines: []Past{past(1, now.Add(-2*time.Minute), "hi")}}, now); err != nil {
		t.Fatal(err)
	}
	if err := h.add(fake, "bob", History{Room: "lobby", Lines: []Past{past(1, now.Add(-time.Minute), "<alice> I said so")}}, now); err != nil {
		t.Fatal(err)
	}
	got := h.render(func(nick string, from actor.Ref) string { return b.label(nick, from.Peer()) }, now)
	want := []string{
		"* history of #lobby: the last 2 lines of the users present",
		"history 21:28 [#lobby] <bob> hi",
		"history 21:29 [#lobby] <bob@" + peerTail(impostorPeer) + "> <alice> I said so",
		"* end of history",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rendered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := newHistory("lobby", 2, now).render(nil, now); got != nil {
		t.Fatalf("an empty history rendered %q", got)
	}
}

func TestHistoryAskMovesDeadlineBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := newHistory("lobby", 1, t0)
	m := chatRef(t, bobPeer, "bob")
	if !h.ask(m, t0.Add(time.Second)) || h.ask(m, t0.Add(time.Second)) {
		t.Fatal("a member asked not once")
	}
	if !h.deadline.Equal(t0.Add(time.Second + historyQuiet)) {
		t.Fatalf("deadline %v after an ask", h.deadline)
	}
	h.ask(chatRef(t, localPeer, "late"), t0.Add(historyMax))
	if !h.deadline.Equal(t0.Add(historyMax)) {
		t.Fatalf("deadline %v past historyMax", h.deadline)
	}
}

// TestSaidLogAnswerBytesBounded: an answer holds the newest lines whose
// texts fit in maxHistoryBytes, however long the lines said.
func TestSaidLogAnswerBytesBounded(t *testing.T) {
	var l saidLog
	for i := range maxHistory {
		l.add("lobby", fmt.Sprintf("%02d", i)+strings.Repeat("x", maxChatLine-2), time.Unix(int64(i), 0))
	}
	got := l.of("lobby")
	if want := maxHistoryBytes / maxChatLine; len(got) != want || !strings.HasPrefix(got[len(got)-1].Text, "49") || !strings.HasPrefix(got[0].Text, fmt.Sprint(maxHistory-want)) {
		t.Fatalf("an answer of long lines: %d lines (want %d), first %.2s, last %.2s", len(got), want, got[0].Text, got[len(got)-1].Text)
	}
}
