package global

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
