package main

// What a remote workload measures of its own process and its child:
// peak RSS, CPU time, latency percentiles.

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// peakRSS returns VmHWM (peak resident set) in MiB, or 0 where /proc does
// not tell.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(v)
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// cpuAtStart is the process's CPU time when the workload started.
var cpuAtStart time.Duration

// measuringLine and measuredLine are what a client prints on stdout when
// the measured part of its workload starts and ends, so that the parent
// counts the server's CPU time over that part alone.
const (
	measuringLine = "measuring"
	measuredLine  = "measured"
)

// workloadStart starts the measured part of a workload: it collects
// garbage, resets the peak RSS, notes the CPU time used so far and tells
// the parent. It returns the start time.
func workloadStart() time.Time {
	resetPeakRSS()
	fmt.Println(measuringLine)
	cpuAtStart = processCPU()
	return time.Now()
}

// workloadEnd fills in res's rate, peak RSS and CPU time for total
// messages since t0, which workloadStart returned.
func workloadEnd(res *remoteResult, total int, t0 time.Time) {
	res.Rate = float64(total) / time.Since(t0).Seconds()
	res.CPU = (processCPU() - cpuAtStart).Seconds()
	fmt.Println(measuredLine)
	res.RSSMiB = peakRSS()
}

// processCPU returns the user and system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childCPU returns the user and system CPU time of process pid so far, in
// seconds, from /proc (0 where /proc does not tell).
func childCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; count from its ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (utime + stime) / clockTicks
}

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ),
// 100 on Linux.
const clockTicks = 100

// resetPeakRSS collects garbage and resets VmHWM to the current RSS (Linux
// 4.0+), so that peakRSS then covers only what follows.
func resetPeakRSS() {
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// percentiles returns the median and 99th percentile of lat in µs.
func percentiles(lat []time.Duration) (p50, p99 float64) {
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	return q(0.50), q(0.99)
}
