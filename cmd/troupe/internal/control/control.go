package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// The control socket: the CLI sends one JSON request line to the daemon's
// Unix socket and reads one JSON response line. A chat request turns the
// connection into a line stream after the response. A connection that
// starts with anything but '{' speaks HTTP to the mesh view's API
// (http.go).

// Request is one CLI request to the daemon.
type Request struct {
	Cmd     string          `json:"cmd"`
	Peer    string          `json:"peer,omitempty"`
	Addr    string          `json:"addr,omitempty"`
	Type    string          `json:"type,omitempty"`
	Body    json.RawMessage `json:"body,omitempty"`
	Timeout time.Duration   `json:"timeout,omitempty"`
	Count   int             `json:"count,omitempty"`
	Nick    string          `json:"nick,omitempty"`
	Room    string          `json:"room,omitempty"`
	After   uint64          `json:"after_seq,omitempty"` // mesh: a sample other than the one numbered this; deadletters: records above it
	Follow  bool            `json:"follow,omitempty"`    // deadletters: stream new ones
	Wait    time.Duration   `json:"wait,omitempty"`      // send: how long to wait for another peer's bounce
	Level   string          `json:"level,omitempty"`     // loglevel: the level to set; empty to read it
}

// request is Request as the server decodes it: encoding/json's errors
// name the type ("Go struct field request.cmd"), and clients see them.
type request Request

// response is the daemon's answer: a result or an error.
type response struct {
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// MaxJSONMessage caps a message given on the command line.
const MaxJSONMessage = 1 << 20

// maxRequest caps a request line (a message body is at most MaxJSONMessage).
const maxRequest = 2*MaxJSONMessage + 4096

// maxResponse caps a response line: a reply of the largest frame (4 MiB)
// as JSON, with room for escapes.
const maxResponse = 32 << 20

// maxControlConns caps concurrent control connections.
const maxControlConns = 64

// Handler answers a Request; chat requests also get the connection.
type Handler func(ctx context.Context, req Request, conn net.Conn) (result any, stream func(), err error)

// Server serves the control socket.
type Server struct {
	ln     net.Listener
	handle Handler
	web    http.Handler // answers HTTP connections; nil: none
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{}

	mu    sync.Mutex        // guards conns
	conns map[net.Conn]bool // true: a session (chat) that ends by itself
}

// Listen creates the socket at path with mode 0600, serving h, and
// web to HTTP clients. The caller holds the home's lock, so a socket file
// already there is stale and removed.
func Listen(path string, h Handler, web http.Handler) (*Server, error) {
	if len(path) > 100 {
		return nil, fmt.Errorf("control socket path %s is too long for a Unix socket; use a shorter home", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale control socket: %w", err)
	}
	var ln net.Listener
	err := cli.WithUmask(0o177, func() (err error) {
		ln, err = net.Listen("unix", path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{ln: ln, handle: h, web: web, ctx: ctx, cancel: cancel, sem: make(chan struct{}, maxControlConns), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of file descriptors): wait, retry.
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case s.sem <- struct{}{}:
		default:
			writeResponse(conn, nil, errors.New("daemon busy: too many control connections"))
			conn.Close()
			continue
		}
		s.mu.Lock()
		if s.ctx.Err() != nil { // Close has run: it will not see this one
			s.mu.Unlock()
			conn.Close()
			<-s.sem
			return
		}
		s.conns[conn] = false
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			s.serve(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
			conn.Close()
		}()
	}
}

func (s *Server) serve(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if b, err := r.Peek(1); err == nil && b[0] != '{' && s.web != nil {
		s.serveHTTP(conn, r)
		return
	}
	line, err := ReadLimitedLine(r, maxRequest)
	if err != nil {
		writeResponse(conn, nil, fmt.Errorf("bad request: %w", err))
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var wire request
	if err := json.Unmarshal(line, &wire); err != nil {
		writeResponse(conn, nil, fmt.Errorf("bad request: %w", err))
		return
	}
	req := Request(wire)
	if req.Cmd == "chat" || req.Cmd == "deadletters" && req.Follow { // the connection carries the session's lines
		s.mu.Lock()
		s.conns[conn] = true
		s.mu.Unlock()
		result, stream, err := s.handle(s.ctx, req, &bufferedConn{Conn: conn, r: r})
		writeResponse(conn, result, err)
		if err == nil && stream != nil {
			stream()
		}
		return
	}
	// The request ends early when the client goes away (it sends nothing
	// more, so a read returns only at its end).
	ctx, cancel := context.WithCancel(s.ctx)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		_, _ = r.ReadByte()
		cancel()
	}()
	result, after, err := s.handle(ctx, req, nil)
	writeResponse(conn, result, err)
	if err == nil && after != nil {
		after() // once the client has its answer (troupe stop)
	}
	cancel()
	conn.Close()
	<-gone
}

// ErrLineTooLong is returned by ReadLimitedLine.
var ErrLineTooLong = errors.New("line too long")

// ReadLimitedLine reads one line of at most max bytes (the newline
// included). A longer line is consumed to its end and ErrLineTooLong
// returned, so the next call reads the next line. At the end of input it
// returns what it has with the error.
func ReadLimitedLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
		}
		if len(line) > max {
			long, line = true, nil
		}
		if long && err == nil {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, max)
		}
		if long && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func writeResponse(w io.Writer, result any, err error) {
	var resp response
	if err != nil {
		resp.Error = err.Error()
	} else if result != nil {
		b, merr := cli.MarshalJSON(result)
		if merr != nil {
			resp.Error = merr.Error()
		} else {
			resp.Result = b
		}
	}
	b, _ := cli.MarshalJSON(resp)
	_, _ = w.Write(append(b, '\n'))
}

// sessionGrace bounds how long Close lets sessions write their last lines:
// longer than a chat takes to say goodbye.
const sessionGrace = 7 * time.Second

// Close stops accepting and ends open connections: requests at once, while
// sessions (chats) see the server's context end and get sessionGrace, or
// half of what is left of ctx (the rest is for what the caller closes
// next), to write their last lines and finish before their connections
// are closed too. It waits for every goroutine it started.
func (s *Server) Close(ctx context.Context) {
	s.cancel()
	s.ln.Close()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	s.closeConns(false)
	wait := sessionGrace
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline)/2)
	}
	grace := time.NewTimer(wait)
	defer grace.Stop()
	select {
	case <-done:
		return
	case <-ctx.Done():
	case <-grace.C:
	}
	s.closeConns(true)
	<-done
}

// closeConns closes the connections that serve requests, and the sessions
// too when sessions.
func (s *Server) closeConns(sessions bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, session := range s.conns {
		if sessions || !session {
			c.Close()
		}
	}
}

// ErrNoDaemon is returned when no daemon serves the home.
var ErrNoDaemon = errors.New("no daemon is running")

// Dial connects to the daemon of h.
func Dial(h cli.Home) (net.Conn, error) {
	conn, err := net.DialTimeout("unix", h.Socket(), 5*time.Second)
	switch {
	case err == nil:
		return conn, nil
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w on %s; start one with 'troupe daemon'", ErrNoDaemon, h)
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("%w on %s (its control socket is stale); start one with 'troupe daemon'", ErrNoDaemon, h)
	}
	return nil, fmt.Errorf("control socket %s: %w", h.Socket(), err)
}

// Call sends req to the daemon of h and decodes the result into out (when
// not nil). The connection is returned open for streaming requests when
// keep is true; otherwise it is closed.
func Call(ctx context.Context, h cli.Home, req Request, out any, keep bool) (net.Conn, error) {
	conn, err := Dial(h)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		conn.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	r := bufio.NewReader(conn)
	line, err := ReadLimitedLine(r, maxResponse)
	if err != nil {
		conn.Close()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, ErrLineTooLong):
			return nil, fmt.Errorf("the daemon's answer is larger than %d MiB", maxResponse>>20)
		}
		return nil, fmt.Errorf("control socket: daemon closed the connection: %w", err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		conn.Close()
		return nil, fmt.Errorf("control socket: bad response: %w", err)
	}
	if resp.Error != "" {
		conn.Close()
		return nil, errors.New(resp.Error)
	}
	if out != nil && len(resp.Result) > 0 {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			conn.Close()
			return nil, fmt.Errorf("control socket: bad result: %w", err)
		}
	}
	if !keep {
		conn.Close()
		return nil, nil
	}
	if r.Buffered() > 0 {
		return &bufferedConn{Conn: conn, r: r}, nil
	}
	return conn, nil
}

// bufferedConn reads what the response reader already buffered first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite closes the writing side when the connection supports it.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
