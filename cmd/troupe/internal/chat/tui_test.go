package chat

import (
	"bytes"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

func TestTUIFollowsPresenceAndSendsTypedLines(t *testing.T) {
	var typed bytes.Buffer
	m := newTUIModel("ann", "lobby", &typed)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 20})
	for _, l := range []string{
		"* you are ann (p/chat-ann)",
		"* joined #lobby",
		"* bob joined #lobby",
		"* carol joined #lobby",
		"[#lobby] <bob> hi",
		"* bob left #lobby",
		"* dave joined #lobby",
	} {
		m.Update(chatLineMsg(l))
	}
	if got := strings.Join(m.members, ","); got != "carol,dave" {
		t.Fatalf("members %q", got)
	}
	view := m.View()
	for _, want := range []string{"[#lobby] <bob> hi", "#lobby", "carol", "dave", "> "} {
		if !strings.Contains(view, want) {
			t.Fatalf("view lacks %q:\n%s", want, view)
		}
	}
	m.Update(chatLineMsg("* in #lobby: ann (you), carol, erin"))
	if got := strings.Join(m.members, ","); got != "carol,erin" {
		t.Fatalf("members after /who: %q", got)
	}
	m.Update(chatLineMsg("* joined #side"))
	if m.room != "side" || len(m.members) != 0 {
		t.Fatalf("after /join: room %q members %q", m.room, m.members)
	}
	for _, r := range "hello" {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	m.Update(tea.KeyMsg{Type: tea.KeyEnter}) // an empty line is not sent
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	if typed.String() != "hello\n/quit\n" {
		t.Fatalf("typed %q", typed.String())
	}
	if _, cmd := m.Update(chatDoneMsg{}); cmd == nil {
		t.Fatal("the end of the chat does not quit the UI")
	}
}

// A line wider than the scrollback wraps, at spaces where it can, instead
// of being cut at the viewport's edge.
func TestTUIWrapsLongLines(t *testing.T) {
	m := newTUIModel("ann", "lobby", &bytes.Buffer{})
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 20}) // a scrollback of 37 cells
	long := "[#lobby] <bob> " + strings.Repeat("word ", 20) + "end"
	unbroken := strings.Repeat("x", 90)
	m.Update(chatLineMsg(long))
	m.Update(chatLineMsg(unbroken))
	view := m.View()
	for _, want := range []string{"[#lobby] <bob> word", "end", strings.Repeat("x", 37)} {
		if !strings.Contains(view, want) {
			t.Fatalf("view lacks %q:\n%s", want, view)
		}
	}
	words, xs := 0, 0
	for _, l := range strings.Split(view, "\n") {
		words += strings.Count(l, "word")
		xs += strings.Count(l, "x")
	}
	if words != 20 || xs != 90 {
		t.Fatalf("%d of 20 words and %d of 90 x shown:\n%s", words, xs, view)
	}
}

// TestTUIShowsHistoryDim: the lines of a room's history and its markers
// are styled apart from live lines, and change no presence.
func TestTUIShowsHistoryDim(t *testing.T) {
	for line, want := range map[string]bool{
		"* history of #lobby: the last 2 lines of the users present": true,
		"history 21:28 [#lobby] <bob> hi":                            true,
		"* end of history":                                           true,
		"21:29 [#lobby] <bob> history is fun":                        false,
		"* bob joined #lobby":                                        false,
	} {
		if isHistory(line) != want {
			t.Fatalf("isHistory(%q) = %v", line, !want)
		}
	}
	m := newTUIModel("ann", "lobby", &bytes.Buffer{})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 20})
	m.Update(chatLineMsg("* joined #lobby"))
	m.Update(chatLineMsg("* history of #lobby: the last 1 line of the users present"))
	m.Update(chatLineMsg("history 21:28 [#lobby] <bob> hi"))
	m.Update(chatLineMsg("* end of history"))
	if len(m.members) != 0 || m.room != "lobby" {
		t.Fatalf("history changed presence: room %q, members %q", m.room, m.members)
	}
	if !strings.Contains(m.View(), "<bob> hi") {
		t.Fatalf("view lacks the history line:\n%s", m.View())
	}
}
