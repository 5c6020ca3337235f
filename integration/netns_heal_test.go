package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// healLiveness is the liveness timeout of the partition test's daemons.
const healLiveness = 3 * time.Second

// healHold is how long the partition lasts after both sides declared it.
const healHold = 6 * time.Second

// TestDropPartitionHeals: two daemons in namespaces over one transport
// (TCP, then QUIC), b connected to a with -connect and watching a's
// echo; iptables DROPs every
// packet that arrives on either side, so that neither side sees a disconnection:
// both declare the other gone within the liveness timeout (+ slack), and
// once the rule goes, b's asks to a's echo work again within 5 s.
func TestDropPartitionHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		skipNetns(t, "iptables is missing")
	}
	for _, tr := range []struct{ name, listen string }{
		{"tcp", "/ip4/0.0.0.0/tcp/0"},
		{"quic", "/ip4/0.0.0.0/udp/0/quic-v1"},
	} {
		t.Run(tr.name, func(t *testing.T) { dropPartition(t, tr.listen) })
	}
}

func dropPartition(t *testing.T, listen string) {
	hosts := newNetns(t).lan(2)
	a, b := joinedPair(t, hosts, fmt.Sprintf(`{"listen": [%q], "mdns": false, "log_level": "warn", "liveness": %q}`, listen, healLiveness))
	// b's monitor of a's echo: something waits on each side, so the
	// liveness timeout applies to both (an idle peer is never declared).
	natWatch(t, b, a.id.String()+"/echo")

	// Incoming packets dropped on both sides: what is sent vanishes, and
	// no send fails (a DROP on OUTPUT fails the sender's sendmsg, which
	// QUIC takes for a dead path at once).
	ipt := func(op string) {
		t.Helper()
		for _, h := range hosts {
			if o, err := exec.Command("ip", "netns", "exec", h, "iptables", op, "INPUT", "-i", "eth0", "-j", "DROP").CombinedOutput(); err != nil {
				t.Fatalf("iptables %s in %s: %v: %s", op, h, err, o)
			}
		}
	}
	ipt("-A")
	cut := time.Now()
	bound := healLiveness + time.Second + 3*time.Second // the stated bound + slack
	a.expectLine(t, bound, "left "+b.id.String())
	aDown := time.Since(cut)
	b.expectLine(t, bound-aDown, "left "+a.id.String())
	bDown := time.Since(cut)
	b.expectLine(t, time.Second, "down "+a.id.String()+"/echo")
	// The partition lasts a while after both sides gave up: long enough
	// for failed redials, and libp2p's dial backoff, to pile up.
	time.Sleep(healHold)
	ipt("-D")
	healed := time.Now()
	echo := a.id.String() + "/echo"
	for {
		code, stdout, _ := cli(t, b.home, "ask", echo, `"back"`, "--timeout", "1s")
		if code == 0 && strings.Contains(stdout, "back") {
			break
		}
		if time.Since(healed) > 5*time.Second {
			t.Fatalf("asks still fail %v after the heal (exit %d)", time.Since(healed), code)
		}
	}
	t.Logf("NodeDown after the cut: a %v, b %v; asks work again %v after the heal",
		aDown.Round(time.Millisecond), bDown.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond))
}

// joinedPair starts a daemon in hosts[0] and one in hosts[1] that
// connects to it, both with config cfg, and returns once each has said
// the other joined.
func joinedPair(t *testing.T, hosts []string, cfg string) (a, b *daemonProc) {
	t.Helper()
	home := func() string {
		h := t.TempDir()
		if err := os.WriteFile(filepath.Join(h, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return h
	}
	a = startDaemonHome(t, home(), hosts[0])
	b = startDaemonHome(t, home(), hosts[1], "-connect", a.addr.String())
	a.expectLine(t, 15*time.Second, "joined "+b.id.String(), "(echo ")
	b.expectLine(t, 15*time.Second, "joined "+a.id.String(), "(echo ")
	return a, b
}
