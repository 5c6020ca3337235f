package main

// Remote workloads run across OS processes: the harness re-executes its own
// binary twice, once as the receiving side ("-role <system>-server", which
// prints its address on stdout and serves until its stdin closes) and once as
// the sending side ("-role <system>-client", which connects, runs one
// workload and prints one "result" line of JSON). The parent only
// orchestrates, so the client's peak RSS is the sender's alone. Everything
// listens and dials on 127.0.0.1.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// rawSys is the raw libp2p stream baseline; its numbers go in the troupe
// column.
const rawSys = "raw"

// Remote workload parameters: the sink acks every remoteWindow messages and
// the source keeps at most remoteWindows windows unacknowledged (40,000
// messages, below Troupe's link queue of 65,536, so nothing can be dropped as
// "link full"). Both systems run the same protocol.
const (
	remoteBody    = 100
	remoteWindow  = 10_000
	remoteWindows = 4
)

// remoteResult is what a client prints.
type remoteResult struct {
	Rate   float64 `json:"rate,omitempty"`    // msgs/s
	P50    float64 `json:"p50_us,omitempty"`  // µs
	P99    float64 `json:"p99_us,omitempty"`  // µs
	RSSMiB float64 `json:"rss_mib,omitempty"` // peak RSS during the workload
	CPU    float64 `json:"cpu_s,omitempty"`   // the client's CPU time during the workload, s
	// ServerCPU is the server's CPU time while the client ran, s; the
	// parent fills it in.
	ServerCPU float64 `json:"-"`
}

// CPUPerMsg returns the CPU time both processes spent per message, in ns.
func (r remoteResult) CPUPerMsg(n int) float64 {
	if n == 0 {
		return 0
	}
	return (r.CPU + r.ServerCPU) * 1e9 / float64(n)
}

// isChild reports whether args ask for a child role.
func isChild(args []string) bool {
	return len(args) > 1 && (args[0] == "-role" || args[0] == "--role")
}

// runChild runs a child role and returns the exit code.
func runChild(args []string) int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	role := fs.String("role", "", "troupe|protoactor|raw + -server|-client")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (127.0.0.1 only)")
	addr := fs.String("addr", "", "client: the server's address")
	work := fs.String("workload", "", "client: ask, oneway (windowed) or blast")
	n := fs.Int("n", 0, "client: messages or round trips")
	warm := fs.Int("warm", 0, "client, one-way workloads: messages sent before the measured n")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	host, _, err := splitListen(*listen)
	if err != nil || host != "127.0.0.1" {
		fmt.Fprintf(os.Stderr, "compare: -listen %q: only 127.0.0.1:<port> is allowed\n", *listen)
		return 2
	}
	system, side, _ := strings.Cut(*role, "-")
	var res remoteResult
	switch side {
	case "server":
		err = serve(system, *listen)
	case "client":
		res, err = client(system, *listen, *addr, *work, *n, *warm)
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "compare %s: %v\n", *role, err)
		return 1
	}
	if side == "client" {
		b, _ := json.Marshal(res)
		fmt.Printf("result %s\n", b)
	}
	return 0
}

func splitListen(s string) (string, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, errors.New("no port")
	}
	p, err := strconv.Atoi(s[i+1:])
	return s[:i], p, err
}

// serve starts system's server side, prints "listen <addr>" and serves until
// stdin closes.
func serve(system, listen string) error {
	var (
		addr string
		stop func() error
		err  error
	)
	switch system {
	case troupeSys, rawSys:
		addr, stop, err = troupeServe(listen)
	case protoSys:
		addr, stop, err = protoServe(listen)
	default:
		err = fmt.Errorf("unknown system %q", system)
	}
	if err != nil {
		return err
	}
	fmt.Printf("listen %s\n", addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return stop()
}

func client(system, listen, addr, work string, n, warm int) (remoteResult, error) {
	switch system {
	case troupeSys:
		return troupeClient(listen, addr, work, n, warm)
	case protoSys:
		return protoClient(listen, addr, work, n, warm)
	case rawSys:
		return rawClient(listen, addr, work, n, warm)
	}
	return remoteResult{}, fmt.Errorf("unknown system %q", system)
}

// childProfile, when set (by -cpuprofile), makes every child write a CPU
// profile to childProfile.<role>.<workload> (the last round's remains).
var childProfile string

// childArgs returns the arguments of a child in role for workload work.
func childArgs(role, work string, args ...string) []string {
	args = append([]string{"-role", role, "-listen", "127.0.0.1:0"}, args...)
	if childProfile != "" {
		args = append(args, "-cpuprofile", childProfile+"."+role+"."+work)
	}
	return args
}

// runRemote starts a server and a client child for system and returns the
// client's result for n messages or round trips; a one-way client sends
// warm messages first, which are not measured.
func runRemote(system, work string, n, warm int, timeout time.Duration) (remoteResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return remoteResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var serverErr bytes.Buffer
	srv := exec.CommandContext(ctx, exe, childArgs(system+"-server", work)...)
	srv.Stderr = &serverErr
	stdin, err := srv.StdinPipe()
	if err != nil {
		return remoteResult{}, err
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		return remoteResult{}, err
	}
	if err := srv.Start(); err != nil {
		return remoteResult{}, err
	}
	defer func() {
		_ = stdin.Close()
		_ = srv.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listen ")
	if err != nil || !ok {
		return remoteResult{}, fmt.Errorf("server did not start (%q, %v): %s", line, err, serverErr.String())
	}
	// The server's CPU time counts from the start of the client, or of
	// its measured part once it says so, to the end of that part (or the
	// client's result).
	srvCPU0 := childCPU(srv.Process.Pid)
	srvCPU1 := -1.0
	var clientErr bytes.Buffer
	cl := exec.CommandContext(ctx, exe, childArgs(system+"-client", work,
		"-addr", addr, "-workload", work, "-n", strconv.Itoa(n), "-warm", strconv.Itoa(warm))...)
	cl.Stderr = &clientErr
	clOut, err := cl.StdoutPipe()
	if err != nil {
		return remoteResult{}, err
	}
	if err := cl.Start(); err != nil {
		return remoteResult{}, err
	}
	var (
		res    remoteResult
		got    bool
		resErr error
		out    strings.Builder
	)
	sc := bufio.NewScanner(clOut)
	for sc.Scan() {
		l := sc.Text()
		switch js, ok := strings.CutPrefix(l, "result "); {
		case l == measuringLine:
			srvCPU0 = childCPU(srv.Process.Pid)
		case l == measuredLine:
			srvCPU1 = childCPU(srv.Process.Pid)
		case ok && !got:
			got = true
			resErr = json.Unmarshal([]byte(js), &res)
			if srvCPU1 < 0 {
				srvCPU1 = childCPU(srv.Process.Pid)
			}
			res.ServerCPU = srvCPU1 - srvCPU0
		default:
			out.WriteString(l + "\n")
		}
	}
	if err := sc.Err(); err != nil { // an overlong line: keep the client unblocked
		out.WriteString("(stdout unreadable: " + err.Error() + ")\n")
		_, _ = io.Copy(io.Discard, clOut)
	}
	if err := cl.Wait(); err != nil {
		return remoteResult{}, fmt.Errorf("client: %v: %s", err, clientErr.String())
	}
	if !got {
		return remoteResult{}, fmt.Errorf("client printed no result: %q %s", out.String(), clientErr.String())
	}
	return res, resErr
}

// remoteWorkloads returns the remote rows: the raw baseline first, so that
// the ask target can refer to it.
func remoteWorkloads(cfg config) []workload {
	rawRTT := fmt.Sprintf("remote raw libp2p request-reply p50, %s round trips (baseline)", count(cfg.askN))
	warmed := "" // the one-way rows measure after their warm-up
	if cfg.remoteWarm > 0 {
		warmed = fmt.Sprintf(", after %s warm-up", count(cfg.remoteWarm))
	}
	asks := func(s string) result {
		res, err := runRemote(s, "ask", cfg.askN, 0, cfg.timeout)
		return result{value: res.P50, extra: []float64{res.P99}, err: err}
	}
	return []workload{
		{
			name: rawRTT, unit: "µs", rounds: cfg.rounds, systems: []string{rawSys}, run: asks,
			extra: []workload{{name: "remote raw libp2p request-reply p99 (baseline)", unit: "µs"}},
		},
		{
			name: fmt.Sprintf("remote ask p50, %s round trips", count(cfg.askN)), unit: "µs", rounds: cfg.rounds,
			goal: 1.5, relTo: rawRTT, run: asks,
			extra: []workload{{name: "remote ask p99", unit: "µs"}},
		},
		{
			name: fmt.Sprintf("remote raw libp2p stream one-way, %s × 100 B%s (baseline)", count(cfg.remoteN), warmed),
			unit: "msgs/s", higher: true, rounds: cfg.rounds, systems: []string{rawSys},
			run: func(s string) result {
				res, err := runRemote(s, "oneway", cfg.remoteN, cfg.remoteWarm, cfg.timeout)
				return result{value: res.Rate, extra: []float64{res.CPUPerMsg(cfg.remoteN)}, err: err}
			},
			extra: []workload{{name: "CPU per message, raw libp2p stream, both processes (baseline)", unit: "ns"}},
		},
		{
			name: fmt.Sprintf("remote one-way, %s × 100 B, windowed%s", count(cfg.remoteN), warmed),
			unit: "msgs/s", higher: true, goal: 2e6, rounds: cfg.rounds,
			run: func(s string) result {
				res, err := runRemote(s, "oneway", cfg.remoteN, cfg.remoteWarm, cfg.timeout)
				return result{value: res.Rate, extra: []float64{res.RSSMiB, res.CPUPerMsg(cfg.remoteN)}, err: err}
			},
			extra: []workload{
				{name: fmt.Sprintf("sender peak RSS, windowed %s", count(cfg.remoteN)), unit: "MiB", goal: 64},
				{name: "CPU per message, windowed, both processes", unit: "ns"},
			},
		},
		{
			name: fmt.Sprintf("remote one-way blast, %s × 100 B, no flow control%s", count(cfg.remoteN), warmed),
			unit: "msgs/s", higher: true, goal: 2e6, rounds: cfg.rounds,
			run: func(s string) result {
				res, err := runRemote(s, "blast", cfg.remoteN, cfg.remoteWarm, cfg.timeout)
				return result{value: res.Rate, extra: []float64{res.RSSMiB, res.CPUPerMsg(cfg.remoteN)}, err: err}
			},
			extra: []workload{
				{name: fmt.Sprintf("sender peak RSS during the %s blast", count(cfg.remoteN)), unit: "MiB", goal: 64},
				{name: "CPU per message, blast, both processes", unit: "ns"},
			},
		},
	}
}
