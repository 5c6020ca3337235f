package chat

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// ErrDaemonGone reports a chat session through a daemon that the daemon
// ended (it stopped, or died), not the user: its last line is not "* bye".
var ErrDaemonGone = errors.New("the daemon ended the chat")

// ThroughDaemon copies the user's lines to the daemon's chat session
// and the session's lines to out until the session ends, and returns
// ErrDaemonGone if the daemon ended it rather than the user. When in is
// a Canceler (a terminal's or pipe's cancelreader), the read of it
// blocked at the session's end is cancelled and waited for, 5 s at
// most; another input's read ends at its next line or its end.
func ThroughDaemon(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer) error {
	defer conn.Close()
	// SIGINT / SIGTERM: leave the chat as /quit does.
	stop := context.AfterFunc(ctx, func() { _, _ = io.WriteString(conn, "/quit\n") })
	defer stop()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Ends with the input, or at the first write after the session
		// closed the connection.
		_, _ = io.Copy(conn, in)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	tail := &lastLine{w: out}
	_, _ = io.Copy(tail, conn)
	conn.Close()
	if c, ok := in.(Canceler); ok {
		c.Cancel()
		select {
		case <-copied:
		case <-time.After(5 * time.Second):
		}
	}
	if !bytes.Equal(bytes.TrimSpace(tail.line), []byte("* bye")) {
		return ErrDaemonGone
	}
	return nil
}

// lastLine writes to w and keeps the end of what it wrote: its last line,
// or the last 64 bytes of it.
type lastLine struct {
	w    io.Writer
	line []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if k := len(l.line); k > 0 && l.line[k-1] == '\n' {
		l.line = l.line[:0] // that line ended: a new one starts
	}
	if i := bytes.LastIndexByte(bytes.TrimRight(p[:n], "\n"), '\n'); i >= 0 {
		l.line = append(l.line[:0], p[i+1:n]...)
	} else {
		l.line = append(l.line, p[:n]...)
	}
	if len(l.line) > 64 {
		l.line = append(l.line[:0], l.line[len(l.line)-64:]...)
	}
	return n, err
}
