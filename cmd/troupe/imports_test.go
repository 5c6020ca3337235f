package main

import (
	"go/parser"
	gotoken "go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUsesThePublicAPIOnly: the binary is built on peer, actor and codec
// (messages), as any application would be, never on routing or
// discovery, whose APIs are the node's own business, nor on actor's
// transport SPI (actor/transport), which only routing and peer need. Its internal
// packages (internal/*) are held to the same rule; they may import each
// other.
func TestUsesThePublicAPIOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var inner []string // internal/ at any depth
	err = filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			inner = append(inner, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(inner) == 0 {
		t.Fatal("no files in internal/*: the test would check nothing there")
	}
	files = append(files, inner...)
	allowed := map[string]bool{"peer": true, "actor": true, "codec": true}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(gotoken.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/troupe-mesh/troupe/cmd/troupe/internal/") {
				continue
			}
			rest, ok := strings.CutPrefix(path, "github.com/troupe-mesh/troupe/")
			if ok && (!allowed[strings.Split(rest, "/")[0]] || rest == "actor/transport") {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
