//go:build !unix

package actor

import "time"

// processCPU is 0 where getrusage is missing: the CPU metrics read 0.
func processCPU() time.Duration { return 0 }
