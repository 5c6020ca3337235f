package control

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// serveHTTP answers the HTTP requests on conn, a control connection that
// did not start with a JSON request (curl --unix-socket), with s.web until
// the client closes it, it idles for a minute, or Close; it returns once
// its handler returned.
func (s *Server) serveHTTP(conn net.Conn, r *bufio.Reader) {
	_ = conn.SetReadDeadline(time.Time{}) // the server sets its own
	closed := make(chan struct{})
	srv := &http.Server{
		Handler: s.web, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				close(closed) // after the handler returned
			}
		},
	}
	l := &oneConnListener{ch: make(chan net.Conn, 1), done: make(chan struct{})}
	l.ch <- &bufferedConn{Conn: conn, r: r}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	select {
	case <-closed:
	case <-s.ctx.Done():
	}
	_ = srv.Close()
	<-served
	if l.handed.Load() {
		<-closed // the handler returned
	}
}

// oneConnListener hands out one connection, then waits for Close.
type oneConnListener struct {
	ch     chan net.Conn
	done   chan struct{}
	once   sync.Once
	handed atomic.Bool // the connection was handed out: the server owns it
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, net.ErrClosed
	default:
	}
	select {
	case c := <-l.ch:
		l.handed.Store(true)
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.UnixAddr{Name: "control", Net: "unix"} }
