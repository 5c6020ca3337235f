package integration

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// idleWarm is how long TestLivenessIdleCost lets the pair settle (the
// first pings, identify, the groups' grafts and advertisements), and
// idleSettle the watch; idleWindow is how long it counts bytes, each way.
const (
	idleWarm   = 10 * time.Second
	idleSettle = 3 * time.Second
	idleWindow = 20 * time.Second
)

// TestLivenessIdleCost: between two idle daemons with the default
// liveness timeout over TCP, the IP bytes on a's interface (both
// directions: the pair's traffic) for idleWindow with nothing between
// them, then with b watching a's echo, which applies the liveness
// timeout to both sides. The watch may add at most 300 B/s for the pair
// (the pings on one stream kept per peer; a new stream per ping cost
// ~490 B/s), and an idle pair must cost less than a watched one.
func TestLivenessIdleCost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		skipNetns(t, "iptables is missing")
	}
	hosts := newNetns(t).lan(2)
	a, b := joinedPair(t, hosts, `{"listen": ["/ip4/0.0.0.0/tcp/0"], "mdns": false, "log_level": "warn"}`)
	ipt := func(args ...string) string {
		t.Helper()
		o, err := exec.Command("ip", append([]string{"netns", "exec", hosts[0], "iptables", "-w"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables %v: %v: %s", args, err, o)
		}
		return string(o)
	}
	ipt("-A", "INPUT", "-i", "eth0")  // counting rules: no target
	ipt("-A", "OUTPUT", "-o", "eth0") //
	counted := func() (total uint64) {
		t.Helper()
		for _, chain := range []string{"INPUT", "OUTPUT"} {
			// pkts bytes target prot opt in out source destination
			lines := strings.Split(strings.TrimSpace(ipt("-nvxL", chain)), "\n")
			f := strings.Fields(lines[len(lines)-1])
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatalf("iptables -nvxL %s: %q", chain, lines)
			}
			total += n
		}
		return total
	}
	rate := func() float64 {
		t.Helper()
		before, start := counted(), time.Now()
		time.Sleep(idleWindow) // a measurement, not a wait for an event
		return float64(counted()-before) / time.Since(start).Seconds()
	}
	time.Sleep(idleWarm) // not a wait for an event: what settles says nothing
	idle := rate()
	natWatch(t, b, a.id.String()+"/echo")
	time.Sleep(idleSettle) // the monitor's setup and the first ping's new stream are no idle cost
	watched := rate()
	t.Logf("IP bytes of the pair, both ways: idle %.0f B/s, b watching a's echo %.0f B/s: the liveness pings %+.0f B/s",
		idle, watched, watched-idle)
	if watched-idle > 300 {
		t.Fatalf("the liveness pings of a watched pair cost %.0f B/s, want ≤ 300", watched-idle)
	}
	if idle == 0 {
		t.Fatal("no traffic counted")
	}
}
