package peer

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkedBlock is a README code block preceded by
// "<!-- checked: FILE FUNC -->": its lines must be, in order, lines of
// FUNC's body in FILE (a compiled or run Example).
var checkedBlock = regexp.MustCompile("(?s)<!-- checked: (\\S+) (\\S+) -->\n```go\n(.*?)```")

// TestREADMECodeIsCompiled: every checked block of the README matches the
// Example it names, so the README shows code that compiles and runs.
func TestREADMECodeIsCompiled(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := checkedBlock.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatalf("%d checked blocks in the README, want the embedding and two-peer examples", len(blocks))
	}
	for _, b := range blocks {
		file, fn, code := b[1], b[2], b[3]
		src, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		body := funcBody(string(src), fn)
		if body == nil {
			t.Fatalf("%s has no func %s", file, fn)
		}
		i := 0
		for _, line := range strings.Split(code, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			for i < len(body) && body[i] != line {
				i++
			}
			if i == len(body) {
				t.Fatalf("README line %q is not in %s's %s (in that order)", line, file, fn)
			}
			i++
		}
	}
}

// funcBody returns the trimmed lines of the body of func name in src, a
// gofmt-ed Go file, or nil.
func funcBody(src, name string) []string {
	start := strings.Index(src, "\nfunc "+name+"() {\n")
	if start < 0 {
		return nil
	}
	rest := src[start+len("\nfunc "+name+"() {\n"):]
	end := strings.Index(rest, "\n}\n")
	if end < 0 {
		return nil
	}
	var out []string
	for _, line := range strings.Split(rest[:end], "\n") {
		out = append(out, strings.TrimSpace(line))
	}
	return out
}
