package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
)

// chromium returns the path of Debian's Chromium. Without it the test is
// skipped, unless TROUPE_BROWSER_TESTS=required (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-headless-shell", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TROUPE_BROWSER_TESTS") == "required" {
		t.Fatal("no chromium on PATH, and TROUPE_BROWSER_TESTS=required")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// browser starts a headless Chromium that resolves no name and opens no
// connection of its own (no updates, no sync, no QUIC), closed when the
// test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// pageState is what the test reads of the mesh view's page.
type pageState struct {
	Status   string   `json:"status"`
	Peers    []string `json:"peers"`
	Nodes    int      `json:"nodes"`
	Rate     float64  `json:"rate"`
	Hostile  bool     `json:"hostile"`
	Injected int      `json:"injected"`
}

// TestMeshViewInABrowser: a daemon's -ui page, in a real headless
// Chromium, shows every peer (two other daemons and a library node) as a
// row and as a node of the graph, shows a peer's actor name that looks
// like HTML as text, shows the message rate from a peer rise while
// that peer sends, and lists a dead letter in its panel.
func TestMeshViewInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and runs a browser")
	}
	ctx := browser(t)
	a := startDaemonIn(t, "", "-listen", "/ip4/127.0.0.1/tcp/0", "-mdns=false", "-ui", "127.0.0.1:0")
	if a.ui == "" {
		t.Fatal("the daemon printed no ui line")
	}
	b := startDaemon(t, a.addr)
	c := startDaemon(t, a.addr)
	// The daemons' mesh, so that a takes the node's advertisements.
	me := newNode(t, peer.WithMesh("default"), peer.WithGroups(true), peer.WithAdvertisements(100*time.Millisecond, 10*time.Second))
	const hostile = "<b>bold<i>"
	spawn(t, me, hostile, func(c *actor.Context) { c.Receive(actor.Any(func(any) {})) })
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ai, err := libp2ppeer.AddrInfoFromP2pAddr(a.addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := me.Connect(cctx, *ai); err != nil {
		t.Fatal(err)
	}

	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	if _, err := chromedp.Run(tctx, chromedp.Navigate(a.ui)); err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf(`(() => {
		const rows = [...document.querySelectorAll("#peers tbody tr")];
		const me = rows.find(r => r.dataset.peer === %q);
		return {
			status: document.getElementById("status").textContent,
			peers: rows.map(r => r.dataset.peer),
			nodes: document.querySelectorAll("#graph g.node").length,
			rate: me ? parseFloat(me.querySelector(".received-rate").dataset.value) : -1,
			hostile: me ? me.textContent.includes(%q) : false,
			injected: document.querySelectorAll("main b, main i").length,
		};
	})()`, me.ID().String(), hostile)
	read := func() pageState {
		t.Helper()
		s, err := chromedp.Run(tctx, chromedp.Evaluate[pageState](probe))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		if s.Injected != 0 {
			t.Fatalf("text from the mesh was parsed as HTML: %+v", s)
		}
		return s
	}
	waitPage := func(what string, ok func(pageState) bool) pageState {
		t.Helper()
		for {
			s := read()
			if ok(s) {
				return s
			}
			select {
			case <-tctx.Done():
				t.Fatalf("the page never showed %s: %+v", what, s)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	want := []string{b.id.String(), c.id.String(), me.ID().String()}
	s := waitPage("every peer and the library node's actor", func(s pageState) bool {
		for _, id := range want {
			if !slices.Contains(s.Peers, id) {
				return false
			}
		}
		return s.Status == "live" && s.Nodes == 4 && s.Hostile
	})
	if s.Rate >= 20 {
		t.Fatalf("the library node sent nothing yet, and the page shows %v msgs/s from it", s.Rate)
	}

	// The library node asks a's echo until the page shows the rate.
	echo, err := actor.NewRef(a.id.String(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	// Four askers at once: the rate does not hang on one round trip on
	// a loaded machine.
	sending, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for sending.Err() == nil {
				actx, cancel := context.WithTimeout(sending, 5*time.Second)
				_, _ = me.System().Ask(actx, echo, "hi")
				cancel()
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	waitPage("the rate from the library node rising", func(s pageState) bool { return s.Rate >= 20 })

	// A message to an actor a does not have, under a name that looks like
	// HTML: the dead-letter panel shows it, as text, with its reason.
	const ghost = "<i>ghost"
	ghostRef, err := actor.NewRef(a.id.String(), ghost)
	if err != nil {
		t.Fatal(err)
	}
	if err := me.SendCtx(cctx, ghostRef, "boo"); err != nil {
		t.Fatal(err)
	}
	deadProbe := fmt.Sprintf(`(() => {
		const rows = [...document.querySelectorAll("#deadletters tbody tr")];
		const row = rows.find(r => r.querySelector(".to").title === %q);
		return {
			found: !!row,
			reason: row ? row.querySelector(".reason").textContent : "",
			type: row ? row.querySelector(".type").textContent : "",
			empty: !document.getElementById("no-dead").hidden,
			injected: document.querySelectorAll("main b, main i").length,
			// Edge labels come after every edge (no edge hides one), and
			// IDs wrap only where they must (no word broken at each letter).
			labelsOnTop: (() => {
				const kids = [...document.querySelectorAll("#graph > *")];
				const lastEdge = kids.findLastIndex(k => k.classList.contains("edge"));
				const firstLabel = kids.findIndex(k => k.classList.contains("edge-label"));
				return lastEdge >= 0 && firstLabel > lastEdge;
			})(),
			wrap: (() => {
				const td = document.querySelector("#peers tbody td.mono");
				const cs = td ? getComputedStyle(td) : null;
				return cs ? cs.wordBreak + "/" + cs.overflowWrap : "";
			})(),
		};
	})()`, ghostRef.String())
	type deadState struct {
		Found       bool   `json:"found"`
		Reason      string `json:"reason"`
		Type        string `json:"type"`
		Empty       bool   `json:"empty"`
		Injected    int    `json:"injected"`
		LabelsOnTop bool   `json:"labelsOnTop"`
		Wrap        string `json:"wrap"`
	}
	for {
		d, err := chromedp.Run(tctx, chromedp.Evaluate[deadState](deadProbe))
		if err != nil {
			t.Fatalf("reading the dead-letter panel: %v", err)
		}
		if d.Injected != 0 {
			t.Fatalf("a dead letter's name was parsed as HTML: %+v", d)
		}
		if d.Found {
			if d.Reason != "no such actor" || d.Type != "string" || d.Empty || !d.LabelsOnTop || d.Wrap != "normal/anywhere" {
				t.Fatalf("the dead-letter panel: %+v", d)
			}
			break
		}
		select {
		case <-tctx.Done():
			t.Fatalf("the dead-letter panel never showed the letter to %s: %+v", ghostRef, d)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestTop: 'troupe top -n 2' prints two samples of the daemon's view, the
// second with the other daemon in it; with --json, one JSON sample per
// line, each newer than the one before.
func TestTop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the troupe binary")
	}
	a := startDaemon(t)
	b := startDaemon(t, a.addr)
	a.expectLine(t, 10*time.Second, "joined "+b.id.String())
	// The first sample may predate b; the second is taken after the call.
	out := cliOK(t, a.home, "top", "-n", "2")
	samples := strings.Split(out, "\n\n")
	if n := strings.Count(out, "PEER "); n != 2 || !strings.Contains(samples[len(samples)-1], b.id.String()[len(b.id.String())-12:]) {
		t.Fatalf("top -n 2:\n%s", out)
	}
	out = cliOK(t, a.home, "top", "-n", "2", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var views [2]struct {
		Time  time.Time `json:"time"`
		Peers []struct {
			ID string `json:"id"`
		} `json:"peers"`
	}
	if len(lines) != 2 {
		t.Fatalf("top -n 2 --json: %d lines: %q", len(lines), out)
	}
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &views[i]); err != nil {
			t.Fatalf("sample %d: %v %q", i, err, l)
		}
	}
	if p := views[1].Peers; len(p) != 1 || p[0].ID != b.id.String() {
		t.Fatalf("the second sample's peers: %+v, want %v", p, b.id)
	}
	if !views[1].Time.After(views[0].Time) {
		t.Fatalf("the second sample is not newer: %v, %v", views[0].Time, views[1].Time)
	}
}
