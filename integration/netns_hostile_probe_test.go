//go:build linux

package integration

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
)

// The helper processes of TestHostileLoadInNamespaces (the attacker's
// and the honest peer's main loops) and what the test reads of the
// daemon: its RSS (from /proc) and its log lines.

// TestHostileAttacker is the attacker of TestHostileLoadInNamespaces; it
// does nothing unless started by it. It reads lines "STEP SECONDS COUNT IDENTITIES TARGET"
// and answers each with "hostile done STEP {stats}" once every identity
// ended the step and closed its connection.
func TestHostileAttacker(t *testing.T) {
	if os.Getenv("TROUPE_HOSTILE_IDS") == "" {
		t.Skip("the attacker of TestHostileLoadInNamespaces, started by it")
	}
	var err error
	var psk pnet.PSK
	if k := os.Getenv("TROUPE_HOSTILE_PSK"); k != "" {
		if psk, err = hex.DecodeString(k); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := strconv.Atoi(os.Getenv("TROUPE_HOSTILE_IDS"))
	if err != nil {
		t.Fatal(err)
	}
	var all []*hostileIdentity
	for range ids {
		id, err := newHostileIdentity(psk)
		if err != nil {
			t.Fatal(err)
		}
		defer id.h.Close()
		all = append(all, id)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 5 {
			t.Fatalf("bad command %q", in.Text())
		}
		ai, err := libp2ppeer.AddrInfoFromString(f[4])
		if err != nil {
			t.Fatal(err)
		}
		secs, _ := strconv.ParseFloat(f[1], 64)
		count, _ := strconv.Atoi(f[2])
		width, _ := strconv.Atoi(f[3])
		st := runHostileStep(all[:min(width, len(all))], *ai, f[0], time.Duration(secs*float64(time.Second)), count)
		out, _ := json.Marshal(st)
		fmt.Printf("hostile done %s %s\n", f[0], out)
	}
}

// runHostileStep connects every identity to target (a failed
// connection is left out: the PSK step counts them) and runs step on
// each for d.
func runHostileStep(all []*hostileIdentity, target libp2ppeer.AddrInfo, step string, d time.Duration, count int) hostileStats {
	var st hostileStats
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	var connected atomic.Int32
	for _, id := range all {
		id.target = target
		wg.Go(func() {
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			defer ccancel()
			if err := id.h.Connect(cctx, id.target); err != nil {
				fmt.Fprintf(os.Stderr, "hostile: connect: %v\n", err)
				return
			}
			connected.Add(1)
			if f := hostileSteps[step]; f != nil {
				_ = f(ctx, id, count, &st)
			}
			<-ctx.Done() // hold what the step left until the step ends
		})
	}
	wg.Wait()
	for _, id := range all {
		id.release()
	}
	st.Connected = int(connected.Load())
	return st
}

// honestAsks is what a batch of the honest peer's asks of echo gave.
type honestAsks struct {
	N, Fails int
	P50, P99 float64 // milliseconds
	Err      string  `json:",omitempty"` // the first failure
}

// TestHostileHonest is the honest peer of TestHostileLoadInNamespaces;
// it does nothing unless started by it. It reads lines "ask N GAP_MS
// TARGET" (connecting to the daemon TARGET first), answered with
// "honest asks {honestAsks}", and "metrics URL", answered with "honest
// metrics {name: value}" of the daemon's metrics (scrapeMetrics).
func TestHostileHonest(t *testing.T) {
	if _, ok := os.LookupEnv("TROUPE_HOSTILE_PSK"); !ok || os.Getenv("TROUPE_HOSTILE_IDS") != "" {
		t.Skip("the honest peer of TestHostileLoadInNamespaces, started by it")
	}
	opts := []peer.Option{peer.WithListenAddrs("/ip4/0.0.0.0/tcp/0"), peer.WithLogger(testutil.QuietLogger())}
	if k := os.Getenv("TROUPE_HOSTILE_PSK"); k != "" {
		psk, err := hex.DecodeString(k)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, peer.WithPrivateNetwork(psk))
	}
	// A node of its own for each daemon: a node redials the peers it
	// knew, and libp2p limits the rate of connections to one address
	// (both ways), so one node would soon be refused.
	var n *peer.Node
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 4 && f[0] == "ask":
			count, _ := strconv.Atoi(f[1])
			gap, _ := strconv.Atoi(f[2])
			ai, err := libp2ppeer.AddrInfoFromString(f[3])
			if err != nil {
				t.Fatal(err)
			}
			if n == nil || !slices.Contains(n.Peers(), ai.ID) {
				if n != nil {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_ = n.Close(ctx)
					cancel()
				}
				n = newNode(t, opts...)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = n.Connect(ctx, *ai)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
			}
			echoRef, err := peer.Ref(ai.ID, "echo")
			if err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(askEcho(n, echoRef, count, time.Duration(gap)*time.Millisecond))
			fmt.Printf("honest asks %s\n", out)
		case len(f) == 2 && f[0] == "metrics":
			out, _ := json.Marshal(scrapeMetrics(f[1]))
			fmt.Printf("honest metrics %s\n", out)
		default:
			t.Fatalf("bad command %q", in.Text())
		}
	}
}

// askEcho asks echo count times, gap apart, each within 2 s.
func askEcho(n *peer.Node, echoRef actor.Ref, count int, gap time.Duration) honestAsks {
	var res honestAsks
	var lat []time.Duration
	for i := range count {
		if i > 0 {
			time.Sleep(gap) // the pace of the asks, not a synchronization
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		_, err := n.System().Ask(ctx, echoRef, "hello")
		cancel()
		res.N++
		if err != nil {
			res.Fails++
			if res.Err == "" {
				res.Err = err.Error()
			}
			continue
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	ms := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	res.P50, res.P99 = ms(0.50), ms(0.99)
	return res
}

// scrapeMetrics returns the troupe_ samples of a metrics page and the Go
// heap's and goroutines' (none if it cannot be read).
func scrapeMetrics(url string) map[string]float64 {
	out := map[string]float64{}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && (strings.HasPrefix(f[0], "troupe_") || strings.HasPrefix(f[0], "go_memstats_heap_") || f[0] == "go_goroutines") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}

// daemonRSS returns the resident set of process pid, in MiB.
func daemonRSS(t *testing.T, pid int) float64 {
	t.Helper()
	kb, err := procField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
	if err != nil {
		t.Fatalf("the daemon's RSS: %v", err)
	}
	return float64(kb) / 1024
}

// rssSampler records the peak of a process's RSS between start and stop,
// sampled every 50 ms.
type rssSampler struct {
	stop chan struct{}
	done chan struct{}
	peak atomic.Uint64 // KiB
}

func sampleRSS(t *testing.T, pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.peak.Store(uint64(daemonRSS(t, pid) * 1024))
	go func() {
		defer close(s.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			kb, err := procField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
			if err != nil {
				return
			}
			if uint64(kb) > s.peak.Load() {
				s.peak.Store(uint64(kb))
			}
		}
	}()
	return s
}

// end stops the sampler and returns the peak, in MiB.
func (s *rssSampler) end() float64 {
	close(s.stop)
	<-s.done
	return float64(s.peak.Load()) / 1024
}

// lineCounter counts the lines written to it (a daemon's log) and
// passes the first few on to w.
type lineCounter struct {
	w     io.Writer
	mu    sync.Mutex // guards the counts
	lines int
	shown int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range p {
		if b == '\n' {
			c.lines++
		}
	}
	if c.shown < 40 {
		c.shown++
		_, _ = c.w.Write(p)
	}
	return len(p), nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines
}
