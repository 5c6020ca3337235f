package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestDemoRunsCounterAndRing(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "-ring", "1000", "-laps", "2"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr: %s", code, errb.String())
	}
	for _, want := range []string{
		"counter locked at 2",
		"counter value 21",
		"spawned 1000 actors",
		"2000 hops in",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nonsense"},
		{"demo", "-ring", "1"},
		{"demo", "-laps", "0"},
		{"demo", "-timeout", "0"},
		{"demo", "-nosuchflag"},
		{"demo", "extra"},
		{"demo", "-ring", "many"},
		{"daemon", "-mesh", "Bad_Mesh"},
		{"daemon", "-log-level", "loud"},
		{"daemon", "-connect", "/ip4/127.0.0.1/tcp/1"},
		{"daemon", "-connect", "not a multiaddr"},
		{"daemon", "-bootstrap", "/ip4/127.0.0.1/tcp/1"},
		{"daemon", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errb); code != 2 {
			t.Fatalf("%q: exit %d, want 2", args, code)
		}
		if errb.Len() == 0 {
			t.Fatalf("%q: no message on stderr", args)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if run([]string{"version"}, strings.NewReader(""), &out, &errb) != 0 || !strings.HasPrefix(out.String(), "troupe ") {
		t.Fatalf("version: %q", out.String())
	}
	out.Reset()
	if run([]string{"help"}, strings.NewReader(""), &out, &errb) != 0 || !strings.Contains(out.String(), "demo") {
		t.Fatalf("help: %q", out.String())
	}
}

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
