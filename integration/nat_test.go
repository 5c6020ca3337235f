package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/internal/testutil"
)

// natIDJSON is the part of 'troupe id --json' the NAT tests read.
type natIDJSON struct {
	Reachability string   `json:"reachability"`
	Addrs        []string `json:"addrs"`
	HolePunches  struct {
		Tried     uint64 `json:"tried"`
		Succeeded uint64 `json:"succeeded"`
	} `json:"hole_punches"`
	MovedOffRelay uint64 `json:"moved_off_relay"`
}

// natPeerJSON is the part of 'troupe peers --json' the NAT tests read.
type natPeerJSON struct {
	ID      string `json:"id"`
	Relayed bool   `json:"relayed"`
}

// natDaemon starts a daemon in namespace ns listening on port 4001 (TCP
// and QUIC) of every address of family ip ("ip4" or "ip6"), without mDNS
// or the DHT, with the config fields extra (JSON members) and args.
func natDaemon(t *testing.T, ns, ip, extra string, args ...string) *daemonProc {
	t.Helper()
	return natDaemonOn(t, ns, ip, map[string]string{"ip4": "0.0.0.0", "ip6": "::"}[ip], extra, args...)
}

// natDaemonOn is natDaemon listening on address addr of family ip only.
func natDaemonOn(t *testing.T, ns, ip, addr, extra string, args ...string) *daemonProc {
	t.Helper()
	return natDaemonHome(t, t.TempDir(), ns, ip, addr, extra, args...)
}

// natDaemonHome is natDaemonOn in home, which may hold its identity key.
func natDaemonHome(t *testing.T, home, ns, ip, addr, extra string, args ...string) *daemonProc {
	t.Helper()
	cfg := fmt.Sprintf(`{"listen": ["/%s/%s/tcp/4001", "/%s/%s/udp/4001/quic-v1"], "mdns": false, "dht": "off"`, ip, addr, ip, addr) + extra + `}`
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return startDaemonHome(t, home, ns, args...)
}

// natID reads d's 'troupe id --json'.
func natID(t *testing.T, d *daemonProc) natIDJSON {
	t.Helper()
	var r natIDJSON
	cliJSON(t, d.home, &r, "id")
	return r
}

// relayedTo reports whether d's only connections to peer are relayed, and
// whether it is connected at all.
func relayedTo(t *testing.T, d *daemonProc, peer string) (relayed, connected bool) {
	t.Helper()
	var ps []natPeerJSON
	cliJSON(t, d.home, &ps, "peers")
	for _, p := range ps {
		if p.ID == peer {
			return p.Relayed, true
		}
	}
	return false, false
}

// eventually is testutil.Eventually under the name the NAT tests use:
// what they wait for (AutoNAT's verdict, a reservation, a hole punch)
// happens inside other processes, which tell of it only when asked.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, within, what, cond)
}

// TestLaptopsBehindNATs: two laptops, each behind its own NAT, and a
// relay with a second public peer (AutoNAT needs a server other than
// itself) on a public network. Both laptops learn they are private and
// reserve a slot on the relay (A has it in its config, B finds it in the
// relay's advertisement); laptop A reaches laptop B through the relay's
// circuit address and asks B's echo actor. Behind NATs that keep ports,
// A's router first drops what goes directly between the homes, so that
// the first ask certainly goes through the relay; A keeps asking, one
// numbered ask after another, while the test lets direct traffic through,
// hole punching replaces the relayed connection with a direct one and
// both laptops end their links' relayed streams cleanly, and after the
// relay died: every ask is answered with its own number, no reply comes
// twice, and no loss is declared between the laptops. Behind symmetric
// NATs the punch fails and traffic stays on the relay, and still works.
// The laptops chat once direct. With IPv6, homes route global addresses
// through stateful firewalls instead of NATs, and hole punching opens
// them as it does NATs.
func TestLaptopsBehindNATs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	// Not parallel: its IPv6 world failed 2 of 6 runs with the three worlds
	// and the other waiting tests in parallel under load (a dead letter
	// on a laptop), 3 of 3 alone; see .ci/run.
	for _, tc := range []struct {
		name            string
		symmetric, ipv6 bool
	}{{"hole punching", false, false}, {"symmetric NATs", true, false}, {"IPv6 firewalls", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			// Each world has its own namespaces (newNetns) and daemon
			// homes (~60 s under -race, mostly waiting).
			ip, publicIP := "ip4", func(i int) string { return fmt.Sprintf("11.0.0.%d", i) }
			n := newNetns(t)
			var public []string
			var homes []natHome
			if tc.ipv6 {
				ip, publicIP = "ip6", func(i int) string { return fmt.Sprintf("2a00:ff::%d", i) }
				public, homes = n.firewallWorld6(2, 2)
			} else {
				public, homes = n.natWorld(2, tc.symmetric, tc.symmetric)
			}
			relay := natDaemon(t, public[0], ip, "", "-relay-service")
			relayTCP := fmt.Sprintf("/%s/%s/tcp/", ip, publicIP(1))
			relayAddr := relayTCP + "4001/p2p/" + relay.id.String()
			helper := natDaemon(t, public[1], ip, "", "-relay-service", "-connect", relayAddr)
			helperAddr := fmt.Sprintf("/%s/%s/tcp/4001/p2p/%s", ip, publicIP(2), helper.id)
			eventually(t, 60*time.Second, "the relay learns it is public", func() bool {
				return natID(t, relay).Reachability == "public"
			})
			// A names the relay; B finds it in the relay's advertisement.
			start := time.Now()
			a := natDaemon(t, homes[0].laptop, ip, `, "relays": ["`+relayAddr+`"]`, "-connect", relayAddr, "-connect", helperAddr)
			b := natDaemon(t, homes[1].laptop, ip, "", "-connect", relayAddr, "-connect", helperAddr)
			var circuit string
			for _, d := range []*daemonProc{a, b} {
				eventually(t, 90*time.Second, "a laptop learns it is private and reserves a slot on the relay", func() bool {
					id := natID(t, d)
					for _, addr := range id.Addrs {
						if strings.Contains(addr, "/p2p-circuit") && strings.HasPrefix(addr, relayTCP) && id.Reachability == "private" {
							if d == b {
								circuit = addr + "/p2p/" + b.id.String()
							}
							return true
						}
					}
					return false
				})
			}
			reserved := time.Since(start)
			s := newNatAsks(t, a, b)
			// libp2p runs one round of hole punching per relayed
			// connection, from its start: three attempts of about 5 s
			// each. The test does not hold the punch back (dropping the
			// first attempt's packets made the round fail under a loaded
			// CI's -race run): the connection starts relayed (connect
			// says so) and the first ask most likely goes through the
			// relay; that the link's traffic was on the relay and left
			// it without loss is what moved_off_relay and the numbered
			// asks below show, and the symmetric case shows asks over
			// the relay alone.
			connecting := time.Now()
			out := cliOK(t, a.home, "connect", circuit)
			if !strings.Contains(out, "connected "+b.id.String()+" (relayed)") {
				t.Fatalf("connect %s: %q", circuit, out)
			}
			s.ask()
			first := time.Since(connecting)
			// Still relayed after the first ask: the streams of its
			// request and reply were opened on the relay, and must move.
			relayedFirst, _ := relayedTo(t, a, b.id.String())
			t.Logf("from the laptops' start: both reserved on the relay after %v; connecting through it and the first ask took %v more",
				reserved.Round(time.Millisecond), first.Round(time.Millisecond))
			tried := func() uint64 { return natID(t, a).HolePunches.Tried + natID(t, b).HolePunches.Tried }
			punched := func() uint64 { return natID(t, a).HolePunches.Succeeded + natID(t, b).HolePunches.Succeeded }
			if tc.symmetric {
				if relayed, connected := relayedTo(t, a, b.id.String()); !connected || !relayed {
					t.Fatalf("after the first ask: connected %v, relayed %v", connected, relayed)
				}
				eventually(t, 60*time.Second, "a hole punch is tried", func() bool { return tried() > 0 })
				s.askN(19)
				if relayed, connected := relayedTo(t, a, b.id.String()); !connected || !relayed || punched() != 0 {
					t.Fatalf("behind symmetric NATs: connected %v, relayed %v, %d punches succeeded", connected, relayed, punched())
				}
				s.noneTwice()
				t.Logf("ask p50 through the relay %.3f ms", s.p50(1, s.next))
				return
			}
			s.across(relay, connecting, punched, relayedFirst)
			// The chat, through each laptop's daemon.
			ann, bob := startChatHome(t, a.home, "", "ann"), startChatHome(t, b.home, "", "bob")
			ann.expectLine(t, 30*time.Second, "* bob joined #lobby")
			bob.expectLine(t, 30*time.Second, "* ann joined #lobby")
			ann.say(t, "hello from behind a NAT")
			bob.expectLine(t, 10*time.Second, "[#lobby] <ann> hello from behind a NAT")
		})
	}
}
