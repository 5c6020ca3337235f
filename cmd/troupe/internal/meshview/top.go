package meshview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// 'troupe top': the mesh view in the terminal, from the daemon's "mesh"
// request (the same samples as the web view): Render prints a sample as
// text, RunTop is the full-screen view.

// RunTop runs the full-screen view of the daemon of h on the terminal of
// stdin and stdout until the user quits or ctx ends.
func RunTop(ctx context.Context, h cli.Home, stdin io.Reader, stdout io.Writer) error {
	_, err := tea.NewProgram(&topModel{ctx: ctx, h: h}, tea.WithAltScreen(), tea.WithInput(stdin), tea.WithOutput(stdout), tea.WithContext(ctx)).Run()
	return err
}

// Fetch asks the daemon for a sample numbered after after.
func Fetch(ctx context.Context, h cli.Home, after uint64) (json.RawMessage, View, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var raw json.RawMessage
	var v View
	if _, err := control.Call(ctx, h, control.Request{Cmd: "mesh", After: after}, &raw, false); err != nil {
		return nil, v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, v, fmt.Errorf("bad result from the daemon: %w", err)
	}
	return raw, v, nil
}

// Render formats a sample as text at most width columns wide and,
// when height > 0, at most height lines high (the peers that do not fit
// are counted on the last line). What peers chose (actor names) is
// cleaned of terminal controls.
func Render(v View, width, height int) string {
	var b strings.Builder
	b.WriteString(ansi.Truncate(fmt.Sprintf("peer %s  mesh %s  %s", v.Self.ID, cli.Clean(v.Self.Mesh), v.Self.Reachability), max(width, 2), "…") + "\n")
	fmt.Fprintf(&b, "out %s/s  in %s/s  dead letters %d (%s/s)  peers %d\n",
		rateText(v.SentRate), rateText(v.ReceivedRate), v.DeadLetters, rateText(v.DeadLetterRate), len(v.Peers))
	bg := v.Budgets
	b.WriteString(ansi.Truncate(fmt.Sprintf("readers hold %s  streams %d  peers %d  addrs %d  refused %d  watches %d",
		bytesText(bg.ReaderBytes), bg.ReaderStreams, bg.ReaderPeers, bg.ReaderAddrs, bg.ReaderRefused, bg.RemoteWatches), max(width, 2), "…") + "\n\n")
	fmt.Fprintf(&b, "%-14s %-7s %8s %8s %8s %7s %9s  %s\n", "PEER", "LINK", "RTT", "OUT/s", "IN/s", "QUEUED", "HELD", "ACTORS")
	rows := v.Peers
	if height > 0 && len(rows) > max(height-5, 1) { // 5: the header lines
		rows = rows[:max(height-6, 0)]
	}
	for _, p := range rows {
		link, rtt := "direct", "-"
		if p.Relayed {
			link = "relayed"
		}
		if p.LatencyMS > 0 {
			rtt = fmt.Sprintf("%.1fms", p.LatencyMS)
		}
		actors := strings.Join(p.Actors, ",")
		if p.MoreActors > 0 {
			actors += fmt.Sprintf(" +%d", p.MoreActors)
		}
		line := fmt.Sprintf("%-14s %-7s %8s %8s %8s %7d %9s  %s", shortID(p.ID), link, rtt,
			rateText(p.SentRate), rateText(p.ReceivedRate), p.Queued, bytesText(p.HeldBytes), cli.Clean(actors))
		b.WriteString(ansi.Truncate(line, max(width, 2), "…") + "\n")
	}
	if len(rows) < len(v.Peers) {
		fmt.Fprintf(&b, "… %d more peers (a taller window shows them)\n", len(v.Peers)-len(rows))
	}
	if len(v.Peers) == 0 {
		b.WriteString("no peers connected (see troupe doctor)\n")
	}
	return b.String()
}

// shortID is the end of a peer ID: enough to tell peers apart on screen.
func shortID(id string) string {
	if len(id) <= 12 {
		return id
	}
	return "…" + id[len(id)-12:]
}

func rateText(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.0fk", r/1e3)
	case r >= 10 || r == 0:
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// topModel is the full-screen view: it asks for the next sample as soon
// as it has one (the daemon answers when it takes it, every second).
type topModel struct {
	ctx           context.Context
	h             cli.Home
	view          View
	err           error
	width, height int
}

type topViewMsg struct {
	v   View
	err error
}

func (m *topModel) fetch() tea.Cmd {
	after := m.view.Seq
	return func() tea.Msg {
		_, v, err := Fetch(m.ctx, m.h, after)
		if err != nil {
			select { // the daemon is away: try again a little later
			case <-time.After(time.Second):
			case <-m.ctx.Done():
			}
		}
		return topViewMsg{v, err}
	}
}

func (m *topModel) Init() tea.Cmd { return m.fetch() }

func (m *topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		}
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case topViewMsg:
		m.err = msg.err
		if msg.err == nil {
			m.view = msg.v
		}
		return m, m.fetch()
	}
	return m, nil
}

func (m *topModel) View() string {
	width := m.width
	if width <= 0 {
		width = 100
	}
	s := "troupe top (q quits)\n\n"
	if m.view.Seq == 0 && m.err == nil {
		return s + "waiting for the daemon…\n"
	}
	height := 0
	if m.height > 0 {
		height = max(m.height-2, 1)
	}
	if m.err != nil {
		s += ansi.Truncate("daemon: "+cli.Clean(m.err.Error()), width, "…") + "\n\n"
		if height > 0 {
			height = max(height-2, 1)
		}
	}
	return s + Render(m.view, width, height)
}
