package meshview

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// TestRenderTop: top's text shows each peer with its rates, cleans what
// peers chose of terminal controls, and keeps lines within the width (in
// columns: wide characters count twice) and the screen's height.
func TestRenderTop(t *testing.T) {
	v := View{Self: control.IDResult{ID: "me", Mesh: "m", Reachability: "private"}, SentRate: 12345, DeadLetters: 3, Peers: []Peer{
		{PeerInfo: control.PeerInfo{ID: "12D3KooWabcdefghijklmnopqrstuvwxyz", Relayed: true, LatencyMS: 1.5, Actors: []string{"evil\x1b[2Jname", strings.Repeat("x", 300)}}, SentRate: 2.5, Queued: 7, HeldBytes: 2048},
		{PeerInfo: control.PeerInfo{ID: "12D3KooWwide", Actors: []string{strings.Repeat("名前", 60)}}},
	}, Budgets: Budgets{ReaderBytes: 3 << 20, ReaderStreams: 5, ReaderAddrs: 2, ReaderRefused: 9, RemoteWatches: 41}}
	out := Render(v, 80, 0)
	for _, want := range []string{"…opqrstuvwxyz", "relayed", "1.5ms", "2.5", "2.0KiB", "12k", "dead letters 3",
		"readers hold 3.0MiB", "streams 5", "addrs 2", "refused 9", "watches 41"} {
		if !strings.Contains(out, want) {
			t.Errorf("top's text lacks %q:\n%s", want, out)
		}
	}
	if j, err := json.Marshal(v); err != nil || !strings.Contains(string(j), `"budgets":{"reader_bytes":3145728,"reader_streams":5,`) {
		t.Errorf("the view's JSON lacks the budgets (%v): %s", err, j)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence from a peer reached the terminal: %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := ansi.StringWidth(line); n > 80 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	if out := Render(View{}, 80, 0); !strings.Contains(out, "no peers connected") {
		t.Errorf("without peers: %q", out)
	}
	for i := range 30 {
		v.Peers = append(v.Peers, Peer{PeerInfo: control.PeerInfo{ID: fmt.Sprintf("peer%02d", i)}})
	}
	out = Render(v, 80, 10)
	if lines := strings.Count(out, "\n"); lines > 10 || !strings.Contains(out, "more peers") {
		t.Errorf("32 peers in 10 lines: %d lines\n%s", lines, out)
	}
}
