package daemon

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind: every
// daemon, stream and sampler a test started is gone (these tests ran
// under package main's check before they moved here).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
