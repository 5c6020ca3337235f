package chat

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// The user's input: a thread-style actor (actor.System.SpawnThread) reads
// the lines the user types, a blocking read on its own goroutine, and
// sends each to the user's current actor. It ends at the end of the
// input (after sending /quit for it), after a /quit line, or at its next
// line once the session is over. A read blocked in a connection or pipe
// is ended by closing it (Canceler: also a terminal read that can be
// cancelled), which Run does when the session ends; the actor system's
// Shutdown waits for a thread still blocked in a read it cannot end.

// Canceler is an input whose blocked Read Cancel ends (as
// github.com/muesli/cancelreader's readers are): Run cancels it when the
// session ends, so the input's thread does not outlive the session.
type Canceler interface {
	Cancel() bool
}

// inputReader is the input thread's state, owned by its goroutine.
type inputReader struct {
	s     *chatSession
	in    io.Reader
	ended chan struct{} // closed when the thread's behavior returns
}

// run is the input thread's behavior.
func (r *inputReader) run(t *actor.Thread) {
	defer close(r.ended)
	br := bufio.NewReaderSize(r.in, 4096)
	for {
		line, err := control.ReadLimitedLine(br, maxChatLine)
		if errors.Is(err, control.ErrLineTooLong) {
			r.s.printf("! line longer than %d bytes, not sent", maxChatLine)
			continue
		}
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\r\n")
			t.Send(r.s.current(), chatInput{text})
			if isQuit(text) {
				return
			}
		}
		if err != nil {
			break
		}
		select {
		case <-r.s.done: // the session ended (ctx, another way): stop reading
			return
		default:
		}
	}
	t.Send(r.s.current(), chatInput{"/quit"})
}

// isQuit reports whether a typed line is the /quit command, as the user's
// actor reads it (chatState.command).
func isQuit(line string) bool {
	cmd, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	return cmd == "/quit"
}

// interrupt ends a read of in blocked in a connection, a pipe or a
// Canceler and waits for the thread to end, for 5 s at most; it reports
// whether it could. A read it cannot interrupt (a terminal or a file
// read directly) is left to end at the input's next line or end.
func (r *inputReader) interrupt() bool {
	switch in := r.in.(type) {
	case Canceler:
		in.Cancel()
	case net.Conn:
		in.Close()
	case *io.PipeReader:
		in.Close()
	default:
		return false
	}
	select {
	case <-r.ended:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}
