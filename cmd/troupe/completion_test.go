package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestCompleteOffersCommandsFlagsAndArguments(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{""}, commands},
		{[]string{"d"}, []string{"daemon", "deadletters", "doctor", "demo"}},
		{[]string{"daemon", "-log"}, []string{"-log-format", "-log-level"}},
		{[]string{"ask", "--"}, nil}, // flags are written with one dash
		{[]string{"help", "p"}, []string{"peers", "ping"}},
		{[]string{"completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"config", ""}, []string{"show"}},
		{[]string{"nonsense", "-"}, nil},
		{[]string{"daemon", "x"}, nil},
	} {
		var out bytes.Buffer
		if code := run(append([]string{"__complete"}, c.words...), strings.NewReader(""), &out, &out); code != 0 {
			t.Fatalf("%q: exit %d", c.words, code)
		}
		got := strings.Fields(out.String())
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.words, got, c.want)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete -o default -F _troupe troupe", "zsh": "compdef _troupe troupe", "fish": "complete -c troupe"} {
		code, out, _ := runCLI(t, "completion", shell)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "troupe __complete") {
			t.Errorf("completion %s: exit %d, %q", shell, code, out)
		}
	}
	if code, _, errOut := runCLI(t, "completion", "powershell"); code != 2 || !strings.Contains(errOut, "unknown shell") {
		t.Errorf("completion powershell: exit %d, %q; want 2 and unknown shell", code, errOut)
	}
}
