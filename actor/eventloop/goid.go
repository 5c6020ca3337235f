package eventloop

import (
	"runtime"
	"strconv"
)

// GoID returns the current goroutine's id, as goid does: for a blocking
// API outside this package that must recognize a goroutine of its own.
func GoID() uint64 { return goid() }

// goid returns the current goroutine's id, parsed from its stack header
// ("goroutine 42 [running]:"). It costs about a microsecond and is only
// used where a blocking call must detect that it runs on a loop.
func goid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := buf[:n]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	b = b[len(prefix):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, err := strconv.ParseUint(string(b[:i]), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
