package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricsGetEnv names the URL TestMetricsGetHelper fetches.
const metricsGetEnv = "TROUPE_METRICS_GET"

// natRelayMetrics is where the NAT matrix's relay serves its metrics,
// inside its namespace (the test process, outside, cannot reach it).
const natRelayMetrics = "127.0.0.1:9090"

// natRelayCountersWait bounds the helper run of natRelayCounters (and its
// GET): a relay that does not answer fails the test, not hangs it.
const natRelayCountersWait = 30 * time.Second

// natRelayCounters reads the troupe_relay_* metrics of the daemon whose
// metrics are served at natRelayMetrics in namespace ns, by running this
// test binary's TestMetricsGetHelper there.
func natRelayCounters(t *testing.T, ns string) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), natRelayCountersWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestMetricsGetHelper$", "-test.count=1", "-test.timeout="+natRelayCountersWait.String())
	cmd.Env = append(os.Environ(), metricsGetEnv+"=http://"+natRelayMetrics+"/metrics")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the relay's metrics: %v\n%s", err, out)
	}
	counters, err := relayCounters(strings.NewReader(string(out)))
	if err != nil {
		t.Fatalf("the relay's metrics: %v\n%s", err, out)
	}
	return counters
}

// relayCounters picks the troupe_relay_* samples (no labels) out of a
// Prometheus text exposition.
func relayCounters(r io.Reader) (map[string]float64, error) {
	counters := make(map[string]float64)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(name, "troupe_relay_") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %w", sc.Text(), err)
		}
		counters[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, name := range []string{"troupe_relay_reservations", "troupe_relay_circuits", "troupe_relay_member_circuits_total", "troupe_relay_cuts_total"} {
		if _, ok := counters[name]; !ok {
			return nil, fmt.Errorf("no sample of %s", name)
		}
	}
	return counters, nil
}

// natRelayCountersLine is counters as a log line.
func natRelayCountersLine(c map[string]float64) string {
	return fmt.Sprintf("reservations %.0f, circuits open %.0f, member circuits opened %.0f, cuts %.0f",
		c["troupe_relay_reservations"], c["troupe_relay_circuits"], c["troupe_relay_member_circuits_total"], c["troupe_relay_cuts_total"])
}

// TestMetricsGetHelper is not a test: run by natRelayCounters in a
// namespace with metricsGetEnv set, it prints what an HTTP GET of that
// URL returns.
func TestMetricsGetHelper(t *testing.T) {
	url := os.Getenv(metricsGetEnv)
	if url == "" {
		t.Skip("a helper process of the NAT matrix")
	}
	tr := &http.Transport{DisableKeepAlives: true} // no idle connection outlives the test (goleak)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: natRelayCountersWait / 2}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		t.Fatal(err)
	}
}
