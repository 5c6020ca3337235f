package integration

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when its tests leave goroutines behind once
// they have all ended: every node, daemon and namespace a test starts
// is closed by the test. The daemon binary built for the run is removed
// after it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(removingBinary{m}) }

// removingBinary runs the tests, then removes troupeBinary's directory.
type removingBinary struct{ m *testing.M }

func (r removingBinary) Run() int {
	code := r.m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	return code
}
