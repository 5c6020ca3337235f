package cli

import (
	"strings"
	"testing"
)

func TestCleanMakesRemoteTextOneSafeLine(t *testing.T) {
	for in, want := range map[string]string{
		"hi":                       "hi",
		"a\n* mallory joined #x":   "a * mallory joined #x",
		"\x1b]0;title\x07red":      " ]0;title red",
		"tab\there":                "tab here",
		"bad \xff utf8":            "bad   utf8",
		"é and 日本":                 "é and 日本",
		strings.Repeat("x", 20000): strings.Repeat("x", MaxLine) + " …",
	} {
		if got := Clean(in); got != want {
			t.Fatalf("Clean(%.30q) = %.40q, want %.40q", in, got, want)
		}
	}
}
