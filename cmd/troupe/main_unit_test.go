package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain points TROUPE_HOME at a fresh directory, so that no test of this
// package can read or write the real ~/.troupe, and fails the package when
// a test leaves goroutines behind.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "troupe-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("TROUPE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// Every daemon, chat and stream a test started is gone.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestVersionTakesNoArguments(t *testing.T) {
	if code, out, _ := runCLI(t, "version"); code != 0 || !strings.HasPrefix(out, "troupe ") {
		t.Fatalf("version: %d %q", code, out)
	}
	code, _, errOut := runCLI(t, "version", "--bogus")
	if code != 2 {
		t.Fatalf("version --bogus: exit %d", code)
	}
	oneLine(t, "version --bogus", errOut)
}

// 'troupe help COMMAND' prints the command's help (what its -h prints) on
// stdout; an unknown command is a usage error.
func TestHelpForACommand(t *testing.T) {
	_, _, want := runCLI(t, "send", "-h")
	code, out, errOut := runCLI(t, "help", "send")
	if code != 0 || out != want || errOut != "" || !strings.Contains(out, "[PEER/]NAME JSON") {
		t.Fatalf("help send: exit %d, stdout %q, stderr %q; want send -h's help on stdout", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "help", "help"); code != 0 || !strings.Contains(out, "commands:") {
		t.Fatalf("help help: exit %d, %q", code, out)
	}
	for _, args := range [][]string{{"help", "bogus"}, {"help", "send", "extra"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" {
			t.Fatalf("%q: exit %d, stdout %q", args, code, out)
		}
		oneLine(t, strings.Join(args, " "), errOut)
	}
}
