//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHomeMustBePrivate: a home, key or config that group or others may
// change, or that another user owns, is refused with a one-line message
// naming the fix, as ssh refuses such a ~/.ssh; a private one is taken.
func TestHomeMustBePrivate(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, home string)
		want string
	}{
		{"group-writable home", func(t *testing.T, home string) { chmod(t, home, 0o775) }, "chmod go-w"},
		{"world-writable key", func(t *testing.T, home string) {
			writeFile(t, filepath.Join(home, "identity.key"), 0o602)
		}, "chmod go-w"},
		{"group-writable config", func(t *testing.T, home string) {
			writeFile(t, filepath.Join(home, "config.json"), 0o620)
		}, "chmod go-w"},
		{"home of another user", func(t *testing.T, home string) {
			if os.Getuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			if err := os.Chown(home, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			if err := os.Mkdir(home, 0o700); err != nil {
				t.Fatal(err)
			}
			c.make(t, home)
			code, _, errOut := runCLI(t, "init", "-home", home)
			if code == 0 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "refusing") {
				t.Fatalf("exit %d, stderr %q: want a refusal naming %q", code, errOut, c.want)
			}
			oneLine(t, c.name, errOut)
		})
	}
	home := filepath.Join(t.TempDir(), "home")
	if code, _, errOut := runCLI(t, "init", "-home", home); code != 0 {
		t.Fatalf("a new home: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "init", "-home", home); code != 0 && !strings.Contains(errOut, "exists") {
		t.Fatalf("the same home again: exit %d, %q", code, errOut)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode)
}
