//go:build unix

package actor

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process used so far, user and
// system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
