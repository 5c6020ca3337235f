package integration

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// helperSpec says how to start a helper process: this test binary run
// as one of its helper tests (TestRelayHelper, TestChaosPeer,
// TestScaleHelper …), which skip unless their environment is set.
type helperSpec struct {
	ns    string   // the network namespace to run it in; "" for this one
	test  string   // the helper test's name
	flags []string // more test flags (-test.v, -test.timeout=0)
	env   []string // NAME=value added to this process's environment
	// grace is how long the cleanup waits for the helper to exit once its
	// stdin is closed before it kills it; 0 kills it at once.
	grace time.Duration
	// line is called for each line the helper prints on stdout, from the
	// reader goroutine; done is closed when the test ends, before the
	// helper is stopped, so that a send blocked on a test that is gone
	// gives up. end is called after the last line.
	line func(line string, done <-chan struct{})
	end  func()
}

// startHelper starts the helper process s describes, its stderr on this
// process's, and returns its stdin. The process dies with this one
// (dieWithTest); when the test ends it is stopped (s.grace), its stdout
// read to the end and waited for.
func startHelper(tb testing.TB, s helperSpec) io.WriteCloser {
	tb.Helper()
	argv := append([]string{os.Args[0], "-test.run=^" + s.test + "$", "-test.count=1"}, s.flags...)
	if s.ns != "" {
		argv = append([]string{"ip", "netns", "exec", s.ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stderr = os.Stderr
	dieWithTest(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	var read sync.WaitGroup
	read.Go(func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if s.line != nil {
				s.line(sc.Text(), done)
			}
		}
		if s.end != nil {
			s.end()
		}
	})
	tb.Cleanup(func() {
		close(done)
		if s.grace > 0 {
			_ = stdin.Close() // the helper ends its work and exits
			exited := make(chan struct{})
			go func() { read.Wait(); close(exited) }() // stdout ends when it exits
			select {
			case <-exited:
			case <-time.After(s.grace):
			}
		}
		_ = cmd.Process.Kill()
		read.Wait() // before Wait, which closes the pipe
		_ = cmd.Wait()
	})
	return stdin
}

// sendLine hands line to ch unless done is closed first: the line
// handlers' send.
func sendLine(ch chan<- string, line string, done <-chan struct{}) {
	select {
	case ch <- line:
	case <-done:
	}
}
