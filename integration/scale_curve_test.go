package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
)

// The curve of issue 29 item 4: the scale benchmarks at 300 and 1,000
// peers run the same driver as Scale30 and Scale100 (scaleRun), only
// when TROUPE_SCALE_BIG=1: CI runs every benchmark once, and these take
// minutes and most of the machine.
//
//	TROUPE_SCALE_BIG=1 nice -n 10 go test ./integration -run '^$' \
//	    -bench 'Scale(30|100|300|1000)$' -benchtime 1x -timeout 60m

// BenchmarkScale300 is scaleRun with 300 peers (TROUPE_SCALE_BIG=1) in
// one process, in the lighter configuration of BenchmarkScale1000.
func BenchmarkScale300(b *testing.B) {
	bigScale(b)
	for range b.N {
		scaleRun(b, scaleSpec{n: 300, procs: 1, adTTL: 30 * time.Minute, memberEvery: 10})
	}
}

// BenchmarkScale1000 is scaleRun with 1,000 peers (TROUPE_SCALE_BIG=1)
// in a lighter configuration, the same code path: four processes of
// 250 peers (a process may open 20,000 files here, and 1,000 peers hold
// more connections than that), advertisements living 30 minutes instead
// of 90 s (republished every 10 minutes instead of 30 s) and the group
// "all" on one peer in ten: a mesh-wide group and 90 s ads cost every
// peer N/30 s signed messages each, tens of thousands a second to
// verify on this 2-core machine (docs/scale.md, "Model"). The figures
// per peer are those of this process's 250.
func BenchmarkScale1000(b *testing.B) {
	bigScale(b)
	for range b.N {
		scaleRun(b, scaleSpec{n: 1000, procs: 4, adTTL: 30 * time.Minute, memberEvery: 10})
	}
}

func bigScale(b *testing.B) {
	if os.Getenv("TROUPE_SCALE_BIG") != "1" {
		b.Skip("a run of minutes: set TROUPE_SCALE_BIG=1 (docs/benchmarks.md)")
	}
}

// askSamples is how many (asker, name) pairs the curve draws.
const askSamples = 100

// svcName is the public name of node i's echo actor.
func svcName(i int) string { return "svc-" + strconv.Itoa(i) }

// askOnce has nodes[from] find svcName(to) and ask it a Ping: what a
// user's first `troupe ask` of a name does.
func askOnce(ctx context.Context, from *peer.Node, to int) error {
	var t try
	return askTimed(ctx, from, to, &t)
}

// randomPairs draws k (asker, target) pairs: an asker among the local
// nodes, no asker twice while there are others (so that no answer comes
// from an earlier sample's cache), and another peer's name among the n
// of the mesh (nodes 0..local-1 are this process's).
func randomPairs(local, n, k int, r *rand.Rand) [][2]int {
	askers := r.Perm(local)
	var pairs [][2]int
	for i := 0; len(pairs) < k; i++ {
		from := askers[i%local]
		to := r.IntN(n - 1)
		if to >= from {
			to++
		}
		pairs = append(pairs, [2]int{from, to})
	}
	return pairs
}

// askable starts askSamples samples at once: each draws a random local
// asker and a random name of the n peers' and tries, every 500 ms, until the ask succeeds or
// the deadline passes. It returns, on the channel, the times since
// start at which the samples first succeeded (sorted) and how many
// failed.
func askable(nodes []*peer.Node, n int, start time.Time, deadline time.Duration) <-chan askableResult {
	out := make(chan askableResult, 1)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	pairs := randomPairs(len(nodes), n, askSamples, r)
	go func() {
		var mu sync.Mutex
		res := askableResult{errKinds: map[string]int{}}
		var wg sync.WaitGroup
		// At most 16 samples in flight: each may cost a DHT walk and
		// dials, and a hundred at once measure the two cores, not the
		// mesh.
		slots := make(chan struct{}, 16)
		for _, p := range pairs {
			wg.Go(func() {
				for {
					if time.Since(start) > deadline {
						mu.Lock()
						res.failed++
						mu.Unlock()
						return
					}
					slots <- struct{}{}
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					t := try{at: time.Since(start)}
					if p[1] < len(nodes) {
						t.target = nodes[p[1]]
					}
					err := askTimed(ctx, nodes[p[0]], p[1], &t)
					cancel()
					<-slots
					if err != nil {
						t.kind = errKind(err)
					}
					mu.Lock()
					res.tries++
					res.log = append(res.log, t)
					if err != nil && res.lastErr == nil {
						res.lastErr = err
					}
					if err != nil {
						res.errKinds[errKind(err)]++
					}
					mu.Unlock()
					if err == nil {
						mu.Lock()
						res.at = append(res.at, time.Since(start))
						mu.Unlock()
						return
					}
					time.Sleep(500 * time.Millisecond) // the pace of the retries, not a wait for an event
				}
			})
		}
		wg.Wait()
		res.cpu = testutil.ProcessCPU()
		slices.Sort(res.at)
		out <- res
	}()
	return out
}

type askableResult struct {
	at       []time.Duration
	failed   int
	tries    int            // asks tried, the successful ones included
	lastErr  error          // the first failed try's error, if any
	errKinds map[string]int // failed tries by errKind
	log      []try          // every try, in the order they ended
	cpu      time.Duration  // the process's CPU time when the last sample ended
}

// errKind is the sample's step ("whereis" or "ask") and the last part
// of err's text, the cause, without the names and peer IDs before it.
func errKind(err error) string {
	s := err.Error()
	step, _, _ := strings.Cut(s, " ")
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return step + ": " + s
}

// firstAsks measures, once the mesh formed, askSamples cold lookups and
// first asks (Whereis of a name the asker never looked up, then an Ask),
// four at a time: the 2 s target of issue 29. It returns the sorted
// durations of those that succeeded and the errors of the others.
func firstAsks(nodes []*peer.Node, n int) ([]time.Duration, []error) {
	r := rand.New(rand.NewPCG(2, uint64(n)))
	pairs := randomPairs(len(nodes), n, askSamples, r)
	var mu sync.Mutex
	var lats []time.Duration
	var errs []error
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	for _, p := range pairs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			t0 := time.Now()
			err := askOnce(ctx, nodes[p[0]], p[1])
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			lats = append(lats, d)
		})
	}
	wg.Wait()
	slices.Sort(lats)
	return lats, errs
}

// quantile returns the q-quantile of sorted ds (0 if empty).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(q * float64(len(ds)))
	if i >= len(ds) {
		i = len(ds) - 1
	}
	return ds[i]
}

// procIO returns the bytes this process wrote through system calls
// (wchar of /proc/self/io): with every peer in one process on loopback,
// what the peers sent each other, encryption and framing included.
func procIO() (int64, error) { return procField("/proc/self/io", "wchar:") }

// procRSS returns the process's resident set in bytes.
func procRSS() (int64, error) {
	kb, err := procField("/proc/self/status", "VmRSS:")
	return kb << 10, err
}

func procField(path, key string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}

// idleTraffic returns the bytes per second per peer the nodes send over
// window with no application traffic: TCP's bytes sent on the sockets
// open at the end (those opened meanwhile counted from zero, those
// closed meanwhile not at all), and the bytes written by system calls
// (wchar), which also counts what the Go runtime writes to its eventfd.
func idleTraffic(b *testing.B, n int, window time.Duration) (tcp, wchar float64) {
	s0, err1 := tcpSent()
	w0, err2 := procIO()
	t0 := time.Now()
	time.Sleep(window) // a measurement window, not a synchronization
	s1, err3 := tcpSent()
	w1, err4 := procIO()
	secs := time.Since(t0).Seconds() * float64(n)
	tcp, wchar = -1, -1
	if err := firstErr(err1, err3); err != nil {
		b.Logf("idle TCP bytes not measured: %v", err)
	} else {
		var sent uint64
		for k, v := range s1 {
			if v >= s0[k] {
				sent += v - s0[k]
			}
		}
		tcp = float64(sent) / secs
	}
	if err := firstErr(err2, err4); err != nil {
		b.Logf("idle written bytes not measured: %v", err)
	} else {
		wchar = float64(w1-w0) / secs
	}
	return tcp, wchar
}

// reportCurve reports the figures of issue 29 item 4 that scaleRun does
// not already report.
func reportCurve(b *testing.B, n int, ready askableResult, first []time.Duration, firstErrs []error, idleTCP, idleWchar float64, rss int64) {
	// Reported, not failed: a known defect (issue 29) makes a sample
	// fail now and then at 100 peers: a name learned from a gossiped
	// advertisement whose owner's addresses never reach the peerstore
	// ("no addresses" among the failures by kind).
	if ready.failed > 0 {
		b.Logf("%d of %d samples never managed to ask their name", ready.failed, askSamples)
	}
	scaleMetric(b, float64(ready.failed), "askable-never")
	fmt.Fprintf(os.Stderr, "%s: askable: %d tries for %d samples, %d never; first error: %v; failed tries by kind: %v\n",
		b.Name(), ready.tries, askSamples, ready.failed, ready.lastErr, ready.errKinds)
	timeline(b.Name(), ready.log)
	for _, t := range ready.log {
		if t.trace != "" {
			fmt.Fprintf(os.Stderr, "%s: failed ask at %v (connected before %v, %v): %s\n", b.Name(), t.at.Round(time.Millisecond), t.connected, t.kind, t.trace)
		}
	}
	if len(firstErrs) > 0 {
		fmt.Fprintf(os.Stderr, "%s: %d first asks failed, first: %v\n", b.Name(), len(firstErrs), firstErrs[0])
	}
	if len(firstErrs) > 0 {
		b.Logf("%d of %d first asks failed, first: %v", len(firstErrs), askSamples, firstErrs[0])
	}
	scaleMetric(b, quantile(ready.at, 0.5).Seconds(), "s-askable-p50")
	scaleMetric(b, quantile(ready.at, 0.99).Seconds(), "s-askable-p99")
	scaleMetric(b, ready.cpu.Seconds(), "cpu-s-askable")
	scaleMetric(b, float64(quantile(first, 0.5).Milliseconds()), "ms-first-ask-p50")
	scaleMetric(b, float64(quantile(first, 0.99).Milliseconds()), "ms-first-ask-p99")
	scaleMetric(b, float64(len(firstErrs)), "first-asks-failed")
	if idleTCP >= 0 { // not measured in CI's quick runs
		scaleMetric(b, idleTCP, "idle-B/s/peer")
		scaleMetric(b, idleWchar, "idle-wchar-B/s/peer")
	}
	scaleMetric(b, float64(rss)/float64(n)/(1<<20), "RSS-MiB/peer")
}

// scaleMetric reports a metric, and writes it to stderr at once: the
// big runs take minutes to close their peers before the benchmark
// prints anything.
func scaleMetric(b *testing.B, v float64, unit string) {
	b.ReportMetric(v, unit)
	fmt.Fprintf(os.Stderr, "%s: %g %s\n", b.Name(), v, unit)
}

// closeAll closes the nodes, one at a time up to 100 of them (CI's
// Scale30 and Scale100), 32 at a time above: the big runs' cleanups, one
// after the other, take 10 s or more each on a loaded machine. A node
// closes once: the cleanups find them closed.
//
// Why not in parallel always: go-libp2p v0.52.0's host close stops the
// observed-address manager (fx's OnStop) before it closes identify and
// AutoNAT, and that manager's goroutine returns without closing its
// subscription to identification events. A node that goes on receiving
// identify pushes then (other nodes closing at the same moment remove
// their protocols and push) blocks identify's emitter on the full
// subscription, and AutoNAT's close waits on it for ever: a Scale30 run
// hung so in closeAll for minutes. Closing one at a time, no node
// receives pushes from another closing one.
func closeAll(nodes []*peer.Node) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, 1)
	if len(nodes) > 100 {
		slots = make(chan struct{}, 32) // the hang above is possible: see docs/benchmarks.md
	}
	for _, nd := range nodes {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = nd.Close(ctx)
		})
	}
	wg.Wait()
}
