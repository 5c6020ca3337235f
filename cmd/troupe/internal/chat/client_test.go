package chat

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
)

// lastLine keeps the last line written, however the writes split it.
func TestLastLine(t *testing.T) {
	for _, writes := range [][]string{
		{"* you are ann\n* bye\n"},
		{"* you are ann\n", "* bye\n"},
		{"* you are ann\n* b", "ye", "\n"},
		{"* bye"},
	} {
		var out strings.Builder
		l := &lastLine{w: &out}
		for _, w := range writes {
			if _, err := l.Write([]byte(w)); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.TrimSpace(string(l.line)); got != "* bye" {
			t.Errorf("%q: last line %q", writes, got)
		}
		if out.String() != strings.Join(writes, "") {
			t.Errorf("%q: wrote %q", writes, out.String())
		}
	}
	l := &lastLine{w: io.Discard}
	_, _ = l.Write([]byte("* bye\n* joined #lobby\n"))
	if got := strings.TrimSpace(string(l.line)); got != "* joined #lobby" {
		t.Errorf("last line %q", got)
	}
}

// TestThroughDaemonCancelsItsInput: when the daemon's session ends, the
// client's read of a Canceler input (a terminal's cancelreader) blocked
// in its next Read is cancelled and has returned before ThroughDaemon
// does: nothing goes on reading the user's terminal.
func TestThroughDaemonCancelsItsInput(t *testing.T) {
	client, daemon := net.Pipe()
	in := cancelableInput{newBlockingInput(t, "/quit\n")}
	go func() {
		defer daemon.Close()
		line, _ := bufio.NewReader(daemon).ReadString('\n')
		if line == "/quit\n" {
			_, _ = io.WriteString(daemon, "* bye\n")
		}
	}()
	var out strings.Builder
	if err := ThroughDaemon(t.Context(), client, in, &out); err != nil {
		t.Fatalf("%v (output %q)", err, out.String())
	}
	select {
	case <-in.returned:
	default:
		t.Fatal("ThroughDaemon returned while its input was still being read")
	}
}
