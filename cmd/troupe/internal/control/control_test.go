package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// testResult stands for a handler's result.
type testResult struct {
	ID string `json:"id"`
}

// testControl is a control server with a handler that answers "id" and
// fails the rest, closed when the test ends.
func testControl(t *testing.T) (cli.Home, *Server) {
	t.Helper()
	h := cli.Home(t.TempDir())
	s, err := Listen(h.Socket(), func(_ context.Context, req Request, _ net.Conn) (any, func(), error) {
		if req.Cmd == "id" {
			return testResult{ID: "me"}, nil, nil
		}
		return nil, nil, errors.New("no such request")
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return h, s
}

// rawRequest writes raw bytes to the socket and returns the response line.
func rawRequest(t *testing.T, h cli.Home, raw string) response {
	t.Helper()
	conn, err := net.Dial("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = conn.Write([]byte(raw)) }()
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no response to %.40q: %v", raw, err)
	}
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("bad response %q: %v", line, err)
	}
	return r
}

func TestControlSocketRefusesBadRequestsAndKeepsServing(t *testing.T) {
	h, _ := testControl(t)
	fi, err := os.Stat(h.Socket())
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v mode %v", err, fi.Mode())
	}
	// The CLI prints these texts after "troupe <cmd>: ".
	for raw, want := range map[string]string{
		"garbage\n":                               "bad request: ",
		`{"cmd": 5}` + "\n":                       "bad request: ",
		`{"cmd": "unknown"}` + "\n":               "no such request",
		strings.Repeat("x", maxRequest+10) + "\n": "bad request: line too long",
	} {
		if r := rawRequest(t, h, raw); !strings.HasPrefix(r.Error, want) {
			t.Fatalf("%.40q: error %q, want one starting %q", raw, r.Error, want)
		}
	}
	// json's text names the type decoded, as it did before the move.
	if r := rawRequest(t, h, `{"cmd": 5}`+"\n"); !strings.Contains(r.Error, " request.cmd ") {
		t.Fatalf("a number for cmd: %q, want the field named request.cmd", r.Error)
	}
	var id testResult
	if _, err := Call(context.Background(), h, Request{Cmd: "id"}, &id, false); err != nil || id.ID != "me" {
		t.Fatalf("id after bad requests: %+v %v", id, err)
	}
}

func TestControlSocketReplacesStaleSocketAndCloses(t *testing.T) {
	h := cli.Home(t.TempDir())
	if err := os.WriteFile(h.Socket(), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Listen(h.Socket(), func(context.Context, Request, net.Conn) (any, func(), error) {
		return struct{}{}, nil, nil
	}, nil)
	if err != nil {
		t.Fatalf("stale file not replaced: %v", err)
	}
	// An idle connection that never sends a request does not hold Close.
	idle, err := net.Dial("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	done := make(chan struct{})
	go func() { s.Close(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for an idle connection")
	}
	if _, err := Dial(h); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := Listen(filepath.Join(t.TempDir(), strings.Repeat("d", 120), "s"), nil, nil); err == nil {
		t.Fatal("a socket path over the Unix limit was accepted")
	}
}

// Close lets a session write its last lines after the server's context
// ends, and closes a session that does not end by itself once half of
// Close's ctx is gone.
func TestControlCloseLetsSessionsSayGoodbye(t *testing.T) {
	for _, stuck := range []bool{false, true} {
		h := cli.Home(t.TempDir())
		s, err := Listen(h.Socket(), func(ctx context.Context, _ Request, conn net.Conn) (any, func(), error) {
			return struct{}{}, func() {
				if stuck { // reads until its connection is closed
					_, _ = io.Copy(io.Discard, conn)
					return
				}
				<-ctx.Done()
				time.Sleep(50 * time.Millisecond) // a goodbye that takes a while
				_, _ = io.WriteString(conn, "the end\n")
			}, nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := Call(context.Background(), h, Request{Cmd: "chat"}, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second) // 2 s for sessions
		done := make(chan struct{})
		go func() { s.Close(ctx); close(done) }()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		rest, err := io.ReadAll(conn)
		cancel()
		if err != nil {
			t.Fatalf("stuck=%v: %v", stuck, err)
		}
		if want := map[bool]string{false: "the end\n", true: ""}[stuck]; string(rest) != want {
			t.Fatalf("stuck=%v: the session's last lines %q, want %q", stuck, rest, want)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("stuck=%v: Close did not return", stuck)
		}
	}
}

func TestReadLimitedLineSkipsOverlongLines(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("y", 100)+"\nnext\nlast"), 16)
	want := []struct {
		line string
		err  error
	}{{"short\n", nil}, {"", ErrLineTooLong}, {"next\n", nil}, {"last", io.EOF}}
	for i, w := range want {
		line, err := ReadLimitedLine(r, 50)
		if string(line) != w.line || !errors.Is(err, w.err) && !(err == nil && w.err == nil) {
			t.Fatalf("read %d: %q %v, want %q %v", i, line, err, w.line, w.err)
		}
	}
}
