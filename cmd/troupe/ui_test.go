package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/config"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// TestWithRates: rates are the counters' growth per second between two
// samples; a peer new since the last sample, or whose counters went down
// (it reconnected), counts from zero.
func TestWithRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	prev := meshView{Time: t0, Sent: 100, Received: 50, DeadLetters: 1, Peers: []viewPeer{
		{peerInfo: peerInfo{ID: "a"}, Sent: 10, Received: 10},
		{peerInfo: peerInfo{ID: "b"}, Sent: 500, Received: 500},
	}}
	cur := meshView{Time: t0.Add(2 * time.Second), Sent: 300, Received: 50, DeadLetters: 5, Peers: []viewPeer{
		{peerInfo: peerInfo{ID: "a"}, Sent: 110, Received: 30},
		{peerInfo: peerInfo{ID: "b"}, Sent: 20, Received: 4}, // reconnected
		{peerInfo: peerInfo{ID: "c"}, Sent: 8},               // new
	}}
	v := withRates(prev, cur)
	if v.SentRate != 100 || v.ReceivedRate != 0 || v.DeadLetterRate != 2 {
		t.Fatalf("totals: %v out/s, %v in/s, %v dead/s", v.SentRate, v.ReceivedRate, v.DeadLetterRate)
	}
	want := map[string][2]float64{"a": {50, 10}, "b": {10, 2}, "c": {4, 0}}
	for _, p := range v.Peers {
		if w := want[p.ID]; p.SentRate != w[0] || p.ReceivedRate != w[1] {
			t.Errorf("peer %s: %v out/s, %v in/s, want %v", p.ID, p.SentRate, p.ReceivedRate, w)
		}
	}
	if cur.Peers[0].SentRate != 0 {
		t.Fatal("withRates changed its argument's peers")
	}
	if v := withRates(meshView{}, cur); v.SentRate != 0 {
		t.Fatalf("rates without a previous sample: %v", v.SentRate)
	}
}

func TestIsLocalHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1:1": true, "127.9.9.9": true, "[::1]:80": true, "::1": true,
		"": false, "example.com": false, "localhost.evil.com:80": false, "10.0.0.1:80": false, "[::]:80": false, "0.0.0.0:80": false,
	} {
		if got := config.IsLocalHost(host); got != want {
			t.Errorf("config.IsLocalHost(%q) = %v, want %v", host, got, want)
		}
	}
	if err := config.CheckUIAddr("0.0.0.0:8080"); err == nil {
		t.Error("the view may listen on every interface")
	}
	if err := config.CheckUIAddr("127.0.0.1:0"); err != nil {
		t.Error(err)
	}
}

// testHub is a hub whose samples count up: sample n has n messages sent
// to peer "p" and a hostile-looking actor name.
func testHub(t *testing.T) *meshHub {
	n := uint64(0)
	hub := newMeshHub(func(now time.Time) meshView {
		n++
		return meshView{Time: now, Self: idResult{ID: "me"}, Sent: n, Peers: []viewPeer{{peerInfo: peerInfo{ID: "p", Actors: []string{"<img src=x onerror=alert(1)>"}}, Sent: n * 10}}}
	})
	t.Cleanup(hub.start())
	return hub
}

// TestViewAPI: /api/mesh answers the latest sample as JSON, /api/events
// streams one event per sample with rates, another Host is refused, and
// the page is served with a policy that allows only its own files.
func TestViewAPI(t *testing.T) {
	srv := httptest.NewServer(newViewHandler(testHub(t), noDeadLetters))
	defer srv.Close()
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get("/api/mesh")
	var v meshView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Self.ID != "me" || len(v.Peers) != 1 {
		t.Fatalf("/api/mesh: %v %+v", err, v)
	}
	resp.Body.Close()

	resp = get("/")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(string(page), "app.js") {
		t.Fatalf("page: CSP %q, %d bytes", csp, len(page))
	}

	req, _ := http.NewRequest("GET", srv.URL+"/api/mesh", nil)
	req.Host = "attacker.example:80"
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a request for another host: %s", resp.Status)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/api/events", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a request from another site's page: %s", resp.Status)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events", nil)
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: content type %q", ct)
	}
	events := readEvents(bufio.NewReader(resp.Body), 2)
	if len(events) != 2 || events[1].Seq <= events[0].Seq || !events[1].Time.After(events[0].Time) {
		t.Fatalf("events: %+v", events)
	}
	if p := events[1].Peers[0]; p.SentRate <= 0 {
		t.Fatalf("the second event has no rate: %+v", p)
	}
}

// readEvents reads n "mesh" events (fewer if the stream ends).
func readEvents(r *bufio.Reader, n int) []meshView {
	var out []meshView
	for len(out) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			return out
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var v meshView
			if json.Unmarshal([]byte(data), &v) == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// TestViewOnTheControlSocket: an HTTP client (curl --unix-socket) gets
// the view's API on the control socket, JSON requests still work there,
// and Close ends an event stream at once.
func TestViewOnTheControlSocket(t *testing.T) {
	h := cli.Home(t.TempDir())
	s, err := control.Listen(h.Socket(), func(context.Context, control.Request, net.Conn) (any, func(), error) {
		return idResult{ID: "json"}, nil, nil
	}, newViewHandler(testHub(t), noDeadLetters))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", h.Socket())
	}}}
	resp, err := client.Get("http://localhost/api/mesh")
	if err != nil {
		t.Fatal(err)
	}
	var v meshView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Self.ID != "me" {
		t.Fatalf("/api/mesh on the socket: %v %+v", err, v)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var id idResult
	if _, err := control.Call(ctx, h, control.Request{Cmd: "id"}, &id, false); err != nil || id.ID != "json" {
		t.Fatalf("a JSON request: %+v %v", id, err)
	}
	resp, err = client.Get("http://localhost/api/events")
	if err != nil {
		t.Fatal(err)
	}
	body := bufio.NewReader(resp.Body)
	if ev := readEvents(body, 1); len(ev) != 1 {
		t.Fatal("no event on the socket")
	}
	closed := make(chan struct{})
	go func() {
		s.Close(context.Background())
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for an event stream")
	}
	if ev := readEvents(body, 5); len(ev) == 5 {
		t.Fatal("the event stream goes on after Close")
	}
	resp.Body.Close()
}

// TestRenderTop: top's text shows each peer with its rates, cleans what
// peers chose of terminal controls, and keeps lines within the width (in
// columns: wide characters count twice) and the screen's height.
func TestRenderTop(t *testing.T) {
	v := meshView{Self: idResult{ID: "me", Mesh: "m", Reachability: "private"}, SentRate: 12345, DeadLetters: 3, Peers: []viewPeer{
		{peerInfo: peerInfo{ID: "12D3KooWabcdefghijklmnopqrstuvwxyz", Relayed: true, LatencyMS: 1.5, Actors: []string{"evil\x1b[2Jname", strings.Repeat("x", 300)}}, SentRate: 2.5, Queued: 7, HeldBytes: 2048},
		{peerInfo: peerInfo{ID: "12D3KooWwide", Actors: []string{strings.Repeat("名前", 60)}}},
	}}
	out := renderTop(v, 80, 0)
	for _, want := range []string{"…opqrstuvwxyz", "relayed", "1.5ms", "2.5", "2.0KiB", "12k", "dead letters 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("top's text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence from a peer reached the terminal: %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := ansi.StringWidth(line); n > 80 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	if out := renderTop(meshView{}, 80, 0); !strings.Contains(out, "no peers connected") {
		t.Errorf("without peers: %q", out)
	}
	for i := range 30 {
		v.Peers = append(v.Peers, viewPeer{peerInfo: peerInfo{ID: fmt.Sprintf("peer%02d", i)}})
	}
	out = renderTop(v, 80, 10)
	if lines := strings.Count(out, "\n"); lines > 10 || !strings.Contains(out, "more peers") {
		t.Errorf("32 peers in 10 lines: %d lines\n%s", lines, out)
	}
}

// TestCapNames: the view lists at most viewMaxNames names per peer and
// counts the rest.
func TestCapNames(t *testing.T) {
	names := make([]string, viewMaxNames+5)
	got, more := capNames(names)
	if len(got) != viewMaxNames || more != 5 {
		t.Fatalf("%d names, %d more; want %d and 5", len(got), more, viewMaxNames)
	}
	if got, more := capNames(names[:3]); len(got) != 3 || more != 0 {
		t.Fatalf("3 names: %d, %d more", len(got), more)
	}
	// None is [] in the JSON, never null (the page and scripts see one shape).
	got, _ = capNames(nil)
	if b, _ := json.Marshal(meshView{Actors: got, Groups: got}); !strings.Contains(string(b), `"actors":[],"groups":[]`) {
		t.Fatalf("no names: %s", b)
	}
}

// TestMeshHubNext: a watcher gets the sample after its own, waiting for
// it; one that comes from a daemon that restarted (numbered beyond the
// latest) gets the latest at once; samples nobody asked for are not
// encoded.
func TestMeshHubNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := newMeshHub(func(now time.Time) meshView { return meshView{Time: now} })
		stop := hub.start()
		defer stop()
		ctx := context.Background()
		v, b, err := hub.next(ctx, 0)
		if err != nil || v.Seq != 1 || len(b) == 0 {
			t.Fatalf("first sample: %d, %d bytes, %v", v.Seq, len(b), err)
		}
		start := time.Now()
		if v, _, _ = hub.next(ctx, 1); v.Seq != 2 || time.Since(start) != viewEvery {
			t.Fatalf("after 1: sample %d after %v; want 2 after %v", v.Seq, time.Since(start), viewEvery)
		}
		start = time.Now()
		if v, _, _ = hub.next(ctx, 1000); v.Seq != 2 || time.Since(start) != 0 {
			t.Fatalf("after 1000 (a restarted daemon): sample %d after %v; want 2 at once", v.Seq, time.Since(start))
		}
		time.Sleep(3 * viewEvery)
		synctest.Wait()
		if cur, _ := hub.latest(); cur.v.Seq != 5 || cur.json != nil {
			t.Fatalf("sample %d, encoded %v; want 5, not encoded", cur.v.Seq, cur.json != nil)
		}
	})
}
