package main

import (
	"bytes"
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
