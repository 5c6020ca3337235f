// Command compare benchmarks Troupe's actor runtime against Proto.Actor
// (github.com/asynkron/protoactor-go) in one process: every workload runs
// on both systems, alternating Troupe and Proto.Actor for a number of
// rounds, and a markdown table of the medians goes to stdout. Progress and
// every single measurement go to stderr.
//
//	go run . -rounds 5        # full sizes, several minutes
//	go run . -quick           # small sizes, under a minute
//
// The remote workloads re-execute the binary as a server and a client
// process (-role ...), on 127.0.0.1.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

func main() {
	if isChild(os.Args[1:]) {
		// A remote workload's server or client (see remote.go).
		os.Exit(runChild(os.Args[1:]))
	}
	rounds := flag.Int("rounds", 5, "A/B rounds per workload")
	memRounds := flag.Int("mem-rounds", 0, "A/B rounds for idle memory (0: same as -rounds)")
	quick := flag.Bool("quick", false, "small sizes, for smoke runs (< 60 s)")
	only := flag.String("run", "", "only run workloads whose name contains this")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (remote workloads: of each child process, to this file.<role>.<workload>)")
	flag.Parse()
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "compare: -rounds must be at least 1")
		os.Exit(2)
	}
	cfg := fullConfig(*rounds)
	if *quick {
		cfg = quickConfig(*rounds)
	}
	if *memRounds > 0 {
		cfg.memRounds = *memRounds
	}
	ws := filter(workloads(cfg), *only)
	loadBefore := loadAvg()
	childProfile = *cpuProfile
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	rows, err := runAll(ws, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	fmt.Printf("GOMAXPROCS=%d, %s, %s/%s, took %v, load average %s before and %s after\n\n",
		runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, time.Since(start).Round(time.Second),
		loadBefore, loadAvg())
	writeTable(os.Stdout, rows)
}

func filter(ws []workload, only string) []workload {
	if only == "" {
		return ws
	}
	var out []workload
	for _, w := range ws {
		if strings.Contains(w.name, only) {
			out = append(out, w)
		}
	}
	return out
}

// runAll runs every workload for its rounds, Troupe then Proto.Actor in
// each round (A, B, A, B, ...), each run on a fresh system after a GC. A
// workload with extra rows yields them after its own.
func runAll(ws []workload, log io.Writer) ([]row, error) {
	rows := make([]row, 0, len(ws))
	for _, w := range ws {
		rs := make([]row, 1+len(w.extra))
		rs[0].w = w
		for i, x := range w.extra {
			x.rounds = w.rounds
			rs[1+i].w = x
		}
		systems := w.systems
		if len(systems) == 0 {
			systems = []string{troupeSys, protoSys}
		}
		for i := range w.rounds {
			for _, sys := range systems {
				runtime.GC()
				res := w.run(sys)
				if res.err == nil && len(res.extra) != len(w.extra) {
					res.err = fmt.Errorf("%d extra values for %d extra rows", len(res.extra), len(w.extra))
				}
				if res.err != nil {
					return nil, fmt.Errorf("%s on %s, round %d: %w", w.name, sys, i+1, res.err)
				}
				for j, v := range append([]float64{res.value}, res.extra...) {
					fmt.Fprintf(log, "%-45s round %d %-10s %s\n", rs[j].w.name, i+1, sys, formatValue(v, rs[j].w.unit))
					if sys == protoSys {
						rs[j].proto = append(rs[j].proto, v)
					} else {
						rs[j].troupe = append(rs[j].troupe, v)
					}
				}
			}
		}
		rows = append(rows, rs...)
	}
	return rows, nil
}

// loadAvg returns the 1-minute load average where the OS tells it (Linux),
// to show whether other processes competed for the cores; "?" elsewhere.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
