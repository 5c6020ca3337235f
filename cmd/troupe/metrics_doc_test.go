package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryMetricIsDocumented: each metric the daemon serves is named in
// docs/cli.md, which lists them for users.
func TestEveryMetricIsDocumented(t *testing.T) {
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`"(troupe_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(names) < 10 {
		t.Fatalf("found %d metric names in metrics.go", len(names))
	}
	for _, m := range names {
		if !strings.Contains(string(doc), "`"+m[1]+"`") {
			t.Errorf("docs/cli.md does not name %s", m[1])
		}
	}
}
