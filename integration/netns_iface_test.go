package integration

import (
	"fmt"
	"testing"
	"time"
)

// A daemon started before its only LAN interface has an address and is up
// (a laptop whose Wi-Fi comes up later) finds the other peer by mDNS once
// the link comes up: mDNS restarts on the new interface.
func TestNetnsIfaceUpLateMDNSRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	n := newNetns(t)
	hosts := n.lan(2)
	late := hosts[0]
	n.ip("-n", late, "link", "set", "eth0", "down")
	n.ip("-n", late, "addr", "flush", "dev", "eth0")

	waiting := startDaemonIn(t, late, "-listen", "/ip4/0.0.0.0/tcp/0", "-mesh", "ifacetest")
	other := startDaemonIn(t, hosts[1], "-listen", "/ip4/0.0.0.0/tcp/0", "-mesh", "ifacetest")

	up := time.Now()
	n.ip("-n", late, "addr", "add", fmt.Sprintf("10.231.0.%d/24", 1), "dev", "eth0")
	n.ip("-n", late, "link", "set", "eth0", "up")
	n.waitUp(late, "eth0")
	waiting.expectLine(t, 20*time.Second, "joined "+other.id.String())
	other.expectLine(t, 20*time.Second, "joined "+waiting.id.String())
	t.Logf("peers found each other %v after the link came up", time.Since(up).Round(10*time.Millisecond))
}
