package meshview

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// TestWithRates: rates are the counters' growth per second between two
// samples; a peer new since the last sample, or whose counters went down
// (it reconnected), counts from zero.
func TestWithRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	prev := View{Time: t0, Sent: 100, Received: 50, DeadLetters: 1, Peers: []Peer{
		{PeerInfo: control.PeerInfo{ID: "a"}, Sent: 10, Received: 10},
		{PeerInfo: control.PeerInfo{ID: "b"}, Sent: 500, Received: 500},
	}}
	cur := View{Time: t0.Add(2 * time.Second), Sent: 300, Received: 50, DeadLetters: 5, Peers: []Peer{
		{PeerInfo: control.PeerInfo{ID: "a"}, Sent: 110, Received: 30},
		{PeerInfo: control.PeerInfo{ID: "b"}, Sent: 20, Received: 4}, // reconnected
		{PeerInfo: control.PeerInfo{ID: "c"}, Sent: 8},               // new
	}}
	v := WithRates(prev, cur)
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
		t.Fatal("WithRates changed its argument's peers")
	}
	if v := WithRates(View{}, cur); v.SentRate != 0 {
		t.Fatalf("rates without a previous sample: %v", v.SentRate)
	}
}

// testHub is a hub whose samples count up: sample n has n messages sent
// to peer "p" and a hostile-looking actor name.
func testHub(t *testing.T) *Hub {
	n := uint64(0)
	hub := NewHub(func(now time.Time) View {
		n++
		return View{Time: now, Self: control.IDResult{ID: "me"}, Sent: n, Peers: []Peer{{PeerInfo: control.PeerInfo{ID: "p", Actors: []string{"<img src=x onerror=alert(1)>"}}, Sent: n * 10}}}
	})
	t.Cleanup(hub.Start())
	return hub
}

// TestViewAPI: /api/mesh answers the latest sample as JSON, /api/events
// streams one event per sample with rates, another Host is refused, and
// the page is served with a policy that allows only its own files.
func TestViewAPI(t *testing.T) {
	srv := httptest.NewServer(NewHandler(testHub(t), noDeadLetters))
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
	var v View
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
func readEvents(r *bufio.Reader, n int) []View {
	var out []View
	for len(out) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			return out
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var v View
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
		return control.IDResult{ID: "json"}, nil, nil
	}, NewHandler(testHub(t), noDeadLetters))
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
	var v View
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Self.ID != "me" {
		t.Fatalf("/api/mesh on the socket: %v %+v", err, v)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var id control.IDResult
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

// TestCapNames: the view lists at most MaxNames names per peer and
// counts the rest.
func TestCapNames(t *testing.T) {
	names := make([]string, MaxNames+5)
	got, more := CapNames(names)
	if len(got) != MaxNames || more != 5 {
		t.Fatalf("%d names, %d more; want %d and 5", len(got), more, MaxNames)
	}
	if got, more := CapNames(names[:3]); len(got) != 3 || more != 0 {
		t.Fatalf("3 names: %d, %d more", len(got), more)
	}
	// None is [] in the JSON, never null (the page and scripts see one shape).
	got, _ = CapNames(nil)
	if b, _ := json.Marshal(View{Actors: got, Groups: got}); !strings.Contains(string(b), `"actors":[],"groups":[]`) {
		t.Fatalf("no names: %s", b)
	}
}

// TestMeshHubNext: a watcher gets the sample after its own, waiting for
// it; one that comes from a daemon that restarted (numbered beyond the
// latest) gets the latest at once; samples nobody asked for are not
// encoded.
func TestMeshHubNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := NewHub(func(now time.Time) View { return View{Time: now} })
		stop := hub.Start()
		defer stop()
		ctx := context.Background()
		v, b, err := hub.Next(ctx, 0)
		if err != nil || v.Seq != 1 || len(b) == 0 {
			t.Fatalf("first sample: %d, %d bytes, %v", v.Seq, len(b), err)
		}
		start := time.Now()
		if v, _, _ = hub.Next(ctx, 1); v.Seq != 2 || time.Since(start) != Every {
			t.Fatalf("after 1: sample %d after %v; want 2 after %v", v.Seq, time.Since(start), Every)
		}
		start = time.Now()
		if v, _, _ = hub.Next(ctx, 1000); v.Seq != 2 || time.Since(start) != 0 {
			t.Fatalf("after 1000 (a restarted daemon): sample %d after %v; want 2 at once", v.Seq, time.Since(start))
		}
		time.Sleep(3 * Every)
		synctest.Wait()
		if cur, _ := hub.latest(); cur.v.Seq != 5 || cur.json != nil {
			t.Fatalf("sample %d, encoded %v; want 5, not encoded", cur.v.Seq, cur.json != nil)
		}
	})
}
