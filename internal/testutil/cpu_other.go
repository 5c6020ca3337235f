//go:build !unix

package testutil

import "time"

// ProcessCPU returns 0 where getrusage is missing: the CPU metrics read 0.
func ProcessCPU() time.Duration { return 0 }
