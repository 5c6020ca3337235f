package cli

import (
	"io"
	"sync"
)

// LockedWriter serializes lines written from several goroutines (actors,
// a control connection); with Stamp, each write (one line) starts with
// what Stamp returns. Safe for concurrent use.
type LockedWriter struct {
	mu    sync.Mutex
	W     io.Writer     // where the lines go
	Stamp func() string // if set, what each write starts with
}

// Write writes p (one line) to W under the lock.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Stamp != nil {
		if _, err := io.WriteString(l.W, l.Stamp()); err != nil {
			return 0, err
		}
	}
	return l.W.Write(p)
}
