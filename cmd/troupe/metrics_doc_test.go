package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryMetricIsDocumented: each metric the node fills in is one it
// defines (so it is served), and each is named in docs/cli.md, which
// lists them for users.
func TestEveryMetricIsDocumented(t *testing.T) {
	src, err := os.ReadFile("../../peer/internal/metrics/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`\{"(troupe_[a-z_]+)",`).FindAllStringSubmatch(string(src), -1) {
		defined[m[1]] = true
	}
	if len(defined) < 10 {
		t.Fatalf("found %d metric definitions in peer/internal/metrics/metrics.go", len(defined))
	}
	for _, m := range regexp.MustCompile(`"(troupe_[a-z_]+)":`).FindAllStringSubmatch(string(src), -1) {
		if !defined[m[1]] {
			t.Errorf("%s has a value but no definition: it is never served", m[1])
		}
	}
	for name := range defined {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/cli.md does not name %s", name)
		}
	}
}
