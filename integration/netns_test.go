package integration

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"
)

// netns creates network namespaces for a test and removes them when it
// ends. Nothing in them can reach the machine's real interfaces.
type netns struct {
	t      *testing.T
	prefix string
	names  []string
}

// netnsSets counts the netns sets this process made.
var netnsSets atomic.Int32

func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		skipNetns(t, "not root: creating network namespaces needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skipNetns(t, "the ip command (iproute2) is missing")
	}
	// A second set in the same process (parallel subtests) gets its own
	// names: trp<pid>_1_, … The whole pid: no other live process here
	// has ours, so a namespace of these names is a dead run's (add
	// removes it).
	prefix := fmt.Sprintf("trp%d", os.Getpid())
	if seq := netnsSets.Add(1) - 1; seq > 0 {
		prefix += fmt.Sprintf("_%d_", seq)
	}
	n := &netns{t: t, prefix: prefix}
	t.Cleanup(func() {
		for _, name := range n.names {
			_ = exec.Command("ip", "netns", "del", name).Run()
		}
	})
	return n
}

// skipNetns skips a namespace test that cannot run here, or fails it
// when TROUPE_NETNS_TESTS=required (.ci/run sets it as root, where it
// installs iproute2 and iptables).
func skipNetns(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("TROUPE_NETNS_TESTS") == "required" {
		t.Fatalf("%s, and TROUPE_NETNS_TESTS=required", why)
	}
	t.Skip(why)
}

func (n *netns) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %v: %v\n%s", args, err, out)
	}
}

func (n *netns) add(name string) string {
	n.t.Helper()
	full := n.prefix + name
	// One of this name is a dead run's, of a process that had our pid and
	// was killed before its cleanup (go test -timeout ends without one).
	_ = exec.Command("ip", "netns", "del", full).Run()
	n.ip("netns", "add", full)
	n.names = append(n.names, full)
	n.ip("-n", full, "link", "set", "lo", "up")
	return full
}

// lan builds a bridge in its own namespace and k hosts, each a namespace
// with one veth port on the bridge and an address 10.231.0.<i>/24.
func (n *netns) lan(k int) []string { return n.lanOf(k, false) }

// lan6 is lan with IPv6 only: each host's address is fd00:231::<i>/64
// (and its link-local one), with no IPv4 address but loopback's.
func (n *netns) lan6(k int) []string { return n.lanOf(k, true) }

func (n *netns) lanOf(k int, v6 bool) []string {
	n.t.Helper()
	br := n.add("br")
	n.ip("-n", br, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
	n.ip("-n", br, "link", "set", "br0", "up")
	hosts := make([]string, k)
	for i := range k {
		h := n.add(fmt.Sprintf("h%d", i+1))
		port := fmt.Sprintf("p%d", i+1)
		if v6 { // no duplicate address detection: addresses usable at once
			if out, err := exec.Command("ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0").CombinedOutput(); err != nil {
				n.t.Fatalf("sysctl in %s: %v: %s", h, err, out)
			}
		}
		n.ip("link", "add", "eth0", "netns", h, "type", "veth", "peer", "name", port, "netns", br)
		if v6 {
			n.ip("-n", h, "addr", "add", fmt.Sprintf("fd00:231::%d/64", i+1), "dev", "eth0", "nodad")
		} else {
			n.ip("-n", h, "addr", "add", fmt.Sprintf("10.231.0.%d/24", i+1), "dev", "eth0")
		}
		n.ip("-n", h, "link", "set", "eth0", "up")
		n.ip("-n", br, "link", "set", port, "master", "br0")
		n.ip("-n", br, "link", "set", port, "up")
		hosts[i] = h
	}
	// mDNS joins its multicast group on the interfaces that are up when it
	// starts: wait until every host's port is operationally up.
	for _, h := range hosts {
		n.waitUp(h, "eth0")
	}
	return hosts
}

// waitUp polls the operational state of an interface, which no event
// announces to us, failing after 10 s.
func (n *netns) waitUp(ns, dev string) {
	n.t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", dev).CombinedOutput()
		if err == nil && strings.Contains(string(out), "state UP") {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			n.t.Fatalf("%s in %s is not up: %s", dev, ns, out)
		}
	}
}

// Three peers in three network namespaces find each other by mDNS alone,
// with no address given, exchange actor messages (each asks the others'
// echo actor on joining), and see a SIGKILLed peer leave.
func TestMDNSFindsPeersInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	hosts := newNetns(t).lan(3)
	daemons := make([]*daemonProc, len(hosts))
	for i, h := range hosts {
		daemons[i] = startDaemonIn(t, h, "-listen", "/ip4/0.0.0.0/tcp/0", "-mesh", "nstest")
	}
	for i, d := range daemons {
		for j, other := range daemons {
			if i == j {
				continue
			}
			d.expectLine(t, 15*time.Second, "joined "+other.id.String(), "(echo ")
		}
	}
	gone := daemons[2]
	if err := gone.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, d := range daemons[:2] {
		d.expectLine(t, 10*time.Second, "left "+gone.id.String())
	}
}

// TestIPv6OnlyLAN: two peers on a LAN with IPv6 only, with the default
// listen addresses (which include IPv6), find each other by mDNS and ask
// each other's echo actor.
func TestIPv6OnlyLAN(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	hosts := newNetns(t).lan6(2)
	a := startDaemonIn(t, hosts[0], "-mesh", "six")
	b := startDaemonIn(t, hosts[1], "-mesh", "six")
	a.expectLine(t, 20*time.Second, "joined "+b.id.String(), "(echo ")
	b.expectLine(t, 20*time.Second, "joined "+a.id.String(), "(echo ")
	if !slices.ContainsFunc(a.addrs, func(m ma.Multiaddr) bool { return strings.HasPrefix(m.String(), "/ip6/fd00:231::1/") }) {
		t.Fatalf("a does not listen on its IPv6 address: %v", a.addrs)
	}
	out, err := exec.Command("ip", "netns", "exec", hosts[0], troupeBinary(t), "peers", "--json", "-home", a.home).Output()
	if err != nil {
		t.Fatalf("troupe peers: %v", err)
	}
	if !strings.Contains(string(out), `"/ip6/fd00:231::2/`) {
		t.Fatalf("a's connection to b is not over IPv6: %s", out)
	}
}
