package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// versionResult is what 'troupe version' prints (also its --json).
type versionResult struct {
	Version  string `json:"version"`            // the module's, -ldflags' main.version, or "dev"
	Commit   string `json:"commit,omitempty"`   // the VCS revision it was built from, when known
	Modified bool   `json:"modified,omitempty"` // built from a tree with changes not committed
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// buildInfo is what the binary knows of its build.
func buildInfo() versionResult {
	r := versionResult{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return r
	}
	if v := bi.Main.Version; version == "dev" && v != "" && v != "(devel)" {
		r.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			r.Commit = s.Value
		case "vcs.modified":
			r.Modified = s.Value == "true"
		}
	}
	return r
}

func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("version", "", "print the version, the commit it was built from, the Go version and the OS/arch", stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if _, ok, code := cli.ParseArgs(fs, args, 0, 0); !ok {
		return code
	}
	r := buildInfo()
	if *asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintln(stdout, "troupe", r.Version)
	if r.Commit != "" {
		mod := ""
		if r.Modified {
			mod = " (modified)"
		}
		fmt.Fprintf(stdout, "commit %s%s\n", r.Commit, mod)
	}
	fmt.Fprintf(stdout, "go %s\nos/arch %s/%s\n", r.Go, r.OS, r.Arch)
	return 0
}
