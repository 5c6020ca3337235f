package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
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
