package chat

import (
	"io"
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
