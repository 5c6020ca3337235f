package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when its tests leave goroutines behind once
// they have all ended: every node, daemon and namespace a test starts
// is closed by the test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
