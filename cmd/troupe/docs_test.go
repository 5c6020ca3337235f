package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// TestDocsNameTheControlSocket: every socket file the README and docs/
// name is the one the daemon creates, so their curl --unix-socket lines
// work as written.
func TestDocsNameTheControlSocket(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	sock := regexp.MustCompile(`[\w.-]+\.sock\b`)
	socketName := filepath.Base(cli.Home("").Socket())
	seen := 0
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range sock.FindAllString(string(doc), -1) {
			seen++
			if name != socketName {
				t.Errorf("%s names the socket %q; the daemon's is %q", f, name, socketName)
			}
		}
	}
	if seen == 0 {
		t.Fatalf("no document names %s", socketName)
	}
}

// TestREADMEListsEveryCommand: the README's one-line command list
// ("`troupe init | daemon | …`") names each command run takes, and no
// other.
func TestREADMEListsEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`troupe (init \\|[^`]*)`").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no \"`troupe init | …`\" command list")
	}
	var listed []string
	for _, c := range strings.Split(string(m[1]), "|") {
		listed = append(listed, strings.Join(strings.Fields(c), " "))
	}
	for _, c := range commands {
		if !slices.ContainsFunc(listed, func(l string) bool { return l == c || strings.HasPrefix(l, c+" ") }) {
			t.Errorf("the README's command list lacks %s", c)
		}
	}
	for _, l := range listed {
		if !slices.Contains(commands, strings.Fields(l)[0]) {
			t.Errorf("the README's command list names %q, which is no command", l)
		}
	}
}
