package chat

import (
	"bufio"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// The chat's terminal UI: scrollback, member list and input line around
// the same chat core as the line mode. The core's lines come in as
// chatLineMsg; what the user types goes out as lines on `typed`. The member
// list follows the core's presence lines, so the UI works the same whether
// the chat runs in this process or in the daemon.

// chatLineMsg is one line of chat output.
type chatLineMsg string

// chatDoneMsg ends the UI (the chat's output ended).
type chatDoneMsg struct{}

const (
	sidebarWidth  = 22
	maxScrollback = 5000
)

type tuiModel struct {
	typed   io.Writer // the user's lines, to the chat core
	nick    string
	room    string
	members []string
	lines   []string
	wrapped []string // lines wrapped to the scrollback's width
	view    viewport.Model
	input   textinput.Model
	width   int
	height  int
	ready   bool
}

func newTUIModel(nick, room string, typed io.Writer) *tuiModel {
	in := textinput.New()
	in.Placeholder = "say something, or /help"
	in.Prompt = "> "
	in.CharLimit = cli.MaxLine / utf8.UTFMax // a rune is at most 4 bytes
	in.Focus()
	return &tuiModel{typed: typed, nick: nick, room: room, input: in}
}

func (m *tuiModel) Init() tea.Cmd { return textinput.Blink }

func (m *tuiModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyMsg:
		switch msg.Type {
		case tea.KeyCtrlC, tea.KeyEsc:
			_, _ = io.WriteString(m.typed, "/quit\n")
			return m, nil
		case tea.KeyEnter:
			line := strings.TrimSpace(m.input.Value())
			m.input.SetValue("")
			if line != "" {
				_, _ = io.WriteString(m.typed, line+"\n")
			}
			return m, nil
		case tea.KeyPgUp, tea.KeyPgDown, tea.KeyUp, tea.KeyDown:
			var cmd tea.Cmd
			m.view, cmd = m.view.Update(msg)
			return m, cmd
		}
	case chatLineMsg:
		m.addLine(string(msg))
		return m, nil
	case chatDoneMsg:
		return m, tea.Quit
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// addLine appends a line to the scrollback and follows presence lines.
func (m *tuiModel) addLine(line string) {
	m.track(line)
	m.lines = append(m.lines, line)
	if m.ready {
		m.wrapped = append(m.wrapped, ansi.Wrap(styleLine(line), m.view.Width, ""))
	}
	if len(m.lines) > maxScrollback {
		m.lines = m.lines[len(m.lines)-maxScrollback:]
		m.wrapped = m.wrapped[max(len(m.wrapped)-maxScrollback, 0):]
	}
	if m.ready {
		atBottom := m.view.AtBottom()
		m.view.SetContent(strings.Join(m.wrapped, "\n"))
		if atBottom {
			m.view.GotoBottom()
		}
	}
}

// track updates nick, room and members from the core's lines.
func (m *tuiModel) track(line string) {
	rest, ok := strings.CutPrefix(line, "* ")
	if !ok {
		return
	}
	switch {
	case strings.HasPrefix(rest, "you are "):
		m.nick = strings.Fields(rest)[2]
	case strings.HasPrefix(rest, "joined #"):
		m.room, m.members = strings.TrimPrefix(rest, "joined #"), nil
	case strings.HasPrefix(rest, "in #"):
		_, list, _ := strings.Cut(rest, ": ")
		m.members = nil
		for _, n := range strings.Split(list, ", ") {
			if !strings.HasSuffix(n, " (you)") {
				m.members = append(m.members, n)
			}
		}
	case strings.HasSuffix(rest, " joined #"+m.room):
		n := strings.TrimSuffix(rest, " joined #"+m.room)
		if !slices.Contains(m.members, n) {
			m.members = append(m.members, n)
		}
	case strings.HasSuffix(rest, " left #"+m.room):
		n := strings.TrimSuffix(rest, " left #"+m.room)
		m.members = slices.DeleteFunc(m.members, func(s string) bool { return s == n })
	}
	slices.Sort(m.members)
}

func (m *tuiModel) layout() {
	w := max(m.width-sidebarWidth-1, 10)
	h := max(m.height-2, 3)
	if !m.ready {
		m.view = viewport.New(w, h)
		m.ready = true
	} else {
		m.view.Width, m.view.Height = w, h
	}
	m.input.Width = max(m.width-4, 10)
	// A line wider than the scrollback wraps (at spaces where it can,
	// else anywhere) instead of being cut at its edge.
	m.wrapped = m.wrapped[:0]
	for _, l := range m.lines {
		m.wrapped = append(m.wrapped, ansi.Wrap(styleLine(l), w, ""))
	}
	m.view.SetContent(strings.Join(m.wrapped, "\n"))
	m.view.GotoBottom()
}

// isHistory reports whether line is a line of a room's history or one of
// its markers (history.go).
func isHistory(line string) bool {
	return strings.HasPrefix(line, "history ") || strings.HasPrefix(line, "* history of #") || line == "* end of history"
}

// styleLine is how the scrollback shows line: history dim.
func styleLine(line string) string {
	if isHistory(line) {
		return historyStyle.Render(line)
	}
	return line
}

var (
	historyStyle = lipgloss.NewStyle().Faint(true)
	sidebarStyle = lipgloss.NewStyle().Width(sidebarWidth).BorderStyle(lipgloss.NormalBorder()).BorderLeft(true).PaddingLeft(1)
	titleStyle   = lipgloss.NewStyle().Bold(true)
)

func (m *tuiModel) View() string {
	if !m.ready {
		return "starting…"
	}
	side := titleStyle.Render("#"+m.room) + "\n" + titleStyle.Render(m.nick) + " (you)\n" + strings.Join(m.members, "\n")
	body := lipgloss.JoinHorizontal(lipgloss.Top, m.view.View(), sidebarStyle.Height(m.view.Height).Render(side))
	return body + "\n" + m.input.View()
}

// RunTUI runs the terminal UI around a chat: start gets the reader of the
// user's lines and the writer for the chat's output, and returns when the
// chat ends.
func RunTUI(nick, room string, stdin io.Reader, stdout io.Writer, start func(in io.Reader, out io.Writer)) error {
	typedR, typedW := io.Pipe()
	outR, outW := io.Pipe()
	p := tea.NewProgram(newTUIModel(nick, room, typedW), tea.WithAltScreen(), tea.WithInput(stdin), tea.WithOutput(stdout))
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 4096), 4*cli.MaxLine)
		for sc.Scan() {
			p.Send(chatLineMsg(sc.Text()))
		}
		p.Send(chatDoneMsg{})
		_, _ = io.Copy(io.Discard, outR) // after an overlong line: never block the chat
	}()
	started := make(chan struct{})
	go func() {
		defer close(started)
		start(typedR, outW)
		outW.Close()
	}()
	_, err := p.Run()
	typedW.Close() // the chat sees the end of input if the UI quit first
	<-started
	outR.Close()
	<-done
	return err
}
