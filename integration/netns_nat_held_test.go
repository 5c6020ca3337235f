package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// natHeldPair is a pair of port-restricted homes whose first round of
// hole punching cannot succeed: each home's NAT drops what its laptop
// sends to the other home until the pair's release, which the asking
// loop calls once B (which starts the rounds) ended libp2p's three
// attempts. Direct after that means a round was tried again on the same
// relayed connection (no loss is declared between them: the connection
// stayed).
//
// Both NATs drop, in FORWARD, before conntrack confirms a connection, so
// that neither keeps an entry from the failed round. With A's NAT alone
// dropping (until 2026-12-07), B's unanswered SYNs left an entry on B's
// NAT (SYN_SENT, 120 s), and between namespaces, where a packet takes
// microseconds from home to home, A's first SYN of the next round
// reached B's NAT before B's own SYN left it (2.5 ms apart in one run):
// the stale entry let it in to B's listener, whose answer conntrack
// found out of the entry's window (counted invalid) and dropped, and
// the half-open connection it left took B's port 4001 toward A, so B's
// punches fell back to random ports ("cannot assign requested address")
// and A's met resets: every round for about two minutes failed (direct
// 151 s after the release; with the entries flushed at the release,
// 0.9–1.0 s, docs/nat.md). Over a real path of milliseconds B's SYN
// leaves first and renews the entry.
func natHeldPair(t *testing.T, n *netns, homes []natHome, laptops []*daemonProc, reachB string) *natPair {
	t.Helper()
	p := natBlockedPair(t, n, "PR×PR held", "DROP", homes, laptops, reachB)
	p.releaseAt, p.within = 3, natHeldWait // libp2p's round is over
	return p
}

// natHeldWait bounds how long a held pair may take to go direct after
// its release. The release comes when the test sees B's third attempt
// ended, a poll of the asking loop later (a second or more under load).
// B's second round starts as its first ends (the 10 s retry waits for
// it) and makes three attempts of up to 5 s each: a release within it
// lets one through.
const natHeldWait = 20 * time.Second

// natRenumberedPair is a pair of port-restricted homes whose NATs refuse
// what goes directly between them (a refused dial fails at once, so
// B's rounds take milliseconds) until B's second round failed (libp2p's,
// and the node's retry 10 s after the connection); its release then lets
// direct traffic through and gives B's laptop a second address on its
// LAN, as a DHCP renewal or a second interface would. Nothing else
// makes B try again before 30 s (punchRetryDelays): direct within
// natRenumberedWait says that the change of B's own addresses brought a
// round at once (holepunch.go's kick).
//
// Renumbering the NAT's outside address instead would not test the
// kick: a laptop sees no change of its own addresses when its NAT's
// changes (it learns its mapped address only from peers' observations,
// on new connections), and a NAT that loses its address breaks the
// relayed connection too, so the next one gets libp2p's first round.
func natRenumberedPair(t *testing.T, n *netns, homes []natHome, laptops []*daemonProc, reachB string) *natPair {
	t.Helper()
	p := natBlockedPair(t, n, "PR×PR renumbered", "REJECT", homes, laptops, reachB)
	p.releaseAt, p.within = 6, natRenumberedWait
	release := p.release
	p.release = func() {
		release()
		// A secondary address: what B's connections use stays as it was.
		n.ip("-n", homes[1].laptop, "addr", "add", strings.TrimSuffix(homes[1].lan, ".2")+".3/24", "dev", "eth0")
	}
	return p
}

// natRenumberedWait bounds how long a renumbered pair may take to go
// direct after B's address changed: a round and a poll of the asking
// loop, well within the 30 s before B's next round is due.
const natRenumberedWait = 10 * time.Second

// natBlockedPair connects laptop A to laptop B through the relay (at
// reachB) with what each home's NAT forwards to the other home dropped
// or refused (target, an iptables target), in FORWARD, until the pair's
// release.
func natBlockedPair(t *testing.T, n *netns, name, target string, homes []natHome, laptops []*daemonProc, reachB string) *natPair {
	t.Helper()
	rule := func(i int) []string { return []string{"FORWARD", "-o", "wan", "-d", homes[1-i].public, "-j", target} }
	for i, h := range homes {
		n.exec(h.nat, append([]string{"iptables", "-I"}, rule(i)...)...)
	}
	p := &natPair{name: name, a: laptops[0], b: laptops[1], allows: true, direct: -1,
		release: func() {
			for i, h := range homes {
				n.exec(h.nat, append([]string{"iptables", "-D"}, rule(i)...)...)
			}
		},
		diag: func() string {
			var b strings.Builder
			for i, h := range homes {
				fmt.Fprintf(&b, "%s: NAT %d's conntrack toward the other home:\n%s\n", name, i+1, natConntrack(t, h.nat, homes[1-i].public))
			}
			return b.String()
		}}
	p.s = &natAsks{t: t, a: p.a, b: p.b}
	out := cliOK(t, p.a.home, "connect", reachB)
	if !strings.Contains(out, "connected "+p.b.id.String()+" (relayed)") {
		t.Fatalf("%s: connect %s: %q", p.name, reachB, out)
	}
	p.relayed = true
	p.s.ask()
	p.first = time.Now()
	natWatch(t, p.a, p.b.id.String()+"/echo")
	natWatch(t, p.b, p.a.id.String()+"/info")
	return p
}

// natHeldWaits reports whether p is a held pair released less than its
// within ago and not yet direct: the asking loop keeps going for it.
func natHeldWaits(p *natPair) bool {
	return p.release == nil && !p.released.IsZero() && p.direct < 0 && time.Since(p.released) < p.within
}

// natConntrack lists the conntrack entries of namespace ns that name
// address addr, or says why it cannot (the conntrack command is not
// among CI's packages: this is for a failure's message).
func natConntrack(t *testing.T, ns, addr string) string {
	t.Helper()
	if _, err := exec.LookPath("conntrack"); err != nil {
		return "(no conntrack command)"
	}
	out, err := exec.Command("ip", "netns", "exec", ns, "conntrack", "-L").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("conntrack -L: %v: %s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "="+addr+" ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
