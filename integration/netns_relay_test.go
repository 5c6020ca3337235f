package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/peer"
)

// relayHelperEnv makes the test binary a relay (TestRelayHelper): its
// value is "<duration>,<bytes>,<member ID>,<member ID>…", the stranger
// limit and the mesh's members.
const relayHelperEnv = "TROUPE_RELAY_HELPER"

// relayLimits returns the stranger limit of TestRelayMembersInNamespaces'
// relay and how long A asks: 3 s (libp2p's default, 2 minutes, is too
// long for CI) and twice that; with TROUPE_LONG_TESTS=1, libp2p's
// defaults and 10 minutes of asks (issue 33's target).
func relayLimits() (stranger time.Duration, data int64, asking time.Duration) {
	if os.Getenv("TROUPE_LONG_TESTS") == "1" {
		return 2 * time.Minute, 128 << 10, 10 * time.Minute
	}
	return 3 * time.Second, 64 << 10, 6 * time.Second
}

// TestRelayMembersInNamespaces: two laptops behind symmetric NATs (hole
// punching cannot make them direct) that are members of the relay's
// mesh, and a third behind another, a stranger to it. A asks B's echo
// through the relay, one numbered ask after another, for twice the
// relay's stranger limit: every ask is answered with its own number, in
// turn and once, the connection stays relayed and no loss is declared
// between them (A's watcher of B's echo prints no down). Meanwhile C, the
// stranger, connects to B through the same relay and watches B's echo:
// the relay cuts C's circuit at the stranger limit and C's watcher says
// so (down). The relay counts one cut end or more and a member circuit.
func TestRelayMembersInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	n := newNetns(t)
	public, homes := n.natWorld(2, true, true, true)
	// The laptops' identities first: the relay is told its members.
	var lapHomes [3]string
	var ids [3]libp2ppeer.ID
	for i := range lapHomes {
		lapHomes[i] = t.TempDir()
		k, err := peer.LoadOrCreateKey(filepath.Join(lapHomes[i], "identity.key"))
		if err != nil {
			t.Fatal(err)
		}
		if ids[i], err = libp2ppeer.IDFromPrivateKey(k); err != nil {
			t.Fatal(err)
		}
	}
	relayStranger, data, asking := relayLimits()
	relay := startHelperProc(t, public[0], "TestRelayHelper", fmt.Sprintf("%s=%v,%d,%s,%s", relayHelperEnv, relayStranger, data, ids[0], ids[1]))
	relayAddr := "/ip4/11.0.0.1/tcp/4001/p2p/" + relay.addr
	helper := natDaemon(t, public[1], "ip4", "", "-relay-service", "-connect", relayAddr)
	helperAddr := "/ip4/11.0.0.2/tcp/4001/p2p/" + helper.id.String()
	var laps [3]*daemonProc
	for i := range laps {
		cfg := `{"listen": ["/ip4/0.0.0.0/tcp/4001"], "mdns": false, "dht": "off", "relays": ["` + relayAddr + `"]}`
		if err := os.WriteFile(filepath.Join(lapHomes[i], "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		laps[i] = startDaemonHome(t, lapHomes[i], homes[i].laptop, "-connect", relayAddr, "-connect", helperAddr)
	}
	a, b, c := laps[0], laps[1], laps[2]
	started := time.Now()
	var circuit string
	eventually(t, 90*time.Second, "B learns it is private and reserves a slot on the relay", func() bool {
		id := natID(t, b)
		for _, addr := range id.Addrs {
			if strings.Contains(addr, "/p2p-circuit") && strings.HasPrefix(addr, "/ip4/11.0.0.1/tcp/") && id.Reachability == "private" {
				circuit = addr + "/p2p/" + b.id.String()
				return true
			}
		}
		return false
	})
	reserved := time.Since(started)
	s := newNatAsks(t, a, b)
	if out := cliOK(t, a.home, "connect", circuit); !strings.Contains(out, "connected "+b.id.String()+" (relayed)") {
		t.Fatalf("A connect %s: %q", circuit, out)
	}
	s.ask()
	natWatch(t, a, b.id.String()+"/echo")
	connected := time.Now() // before: the circuit opens during connect, which takes ~1 s under -race
	if out := cliOK(t, c.home, "connect", circuit); !strings.Contains(out, "connected "+b.id.String()+" (relayed)") {
		t.Fatalf("C connect %s: %q", circuit, out)
	}
	natWatch(t, c, b.id.String()+"/echo")
	// A asks on, for twice the stranger limit (relayLimits), while C's watcher
	// waits for the cut (its lines are read between asks, to time it).
	downC := "down " + b.id.String() + "/echo"
	var cutAfter time.Duration
	for time.Since(connected) < asking {
		s.ask()
		for more := true; more && cutAfter == 0; {
			select {
			case line := <-c.lines:
				if strings.HasPrefix(line, downC) {
					cutAfter = time.Since(connected)
				}
			default:
				more = false
			}
		}
		time.Sleep(100 * time.Millisecond) // a pace: the time is what matters, not the number of asks
	}
	if cutAfter == 0 {
		c.expectLine(t, 5*time.Second, downC)
		cutAfter = time.Since(connected)
	}
	// Cut at the time limit; over minutes (TROUPE_LONG_TESTS) the data cap
	// may come first.
	if cutAfter < relayStranger && asking < time.Minute || cutAfter > relayStranger+4*time.Second { // asks take ~1 s under -race
		t.Fatalf("C's circuit cut %v after connecting; want about the stranger limit, %v", cutAfter, relayStranger)
	}
	t.Logf("B reserved %v after the laptops started; C (stranger) cut %v after it began to connect (limit %v); A (member): %d asks over %v",
		reserved.Round(time.Millisecond), cutAfter.Round(time.Millisecond), relayStranger, s.next, time.Since(connected).Round(time.Millisecond))
	if relayed, connected := relayedTo(t, a, b.id.String()); !connected || !relayed {
		t.Fatalf("A to B after the asks: connected %v, relayed %v; want relayed (symmetric NATs)", connected, relayed)
	}
	natNoDown(t, a, b.id.String())
	s.noneTwice()
	var st peer.RelayStats
	if err := json.Unmarshal([]byte(relay.do(t, "stats", "")), &st); err != nil {
		t.Fatal(err)
	}
	if st.MemberCircuits == 0 || st.Cut == 0 || st.Reservations < 3 {
		t.Fatalf("relay stats %+v: want member circuits, a stranger's cut, the laptops' reservations", st)
	}
	t.Logf("relay %+v; ask p50 through the relay %.3f ms", st, s.p50(1, s.next))
}

// startHelperProc starts the test binary's helper test name in namespace
// ns with env (NAME=value) added; the helper prints "ready <ID>" (its
// addr) and answers commands on stdin.
func startHelperProc(t *testing.T, ns, name, env string) *globalPeer {
	t.Helper()
	p := &globalPeer{lines: make(chan string, 100)}
	p.stdin = startHelper(t, helperSpec{
		ns: ns, test: name, flags: []string{"-test.v"}, env: []string{env},
		line: func(line string, done <-chan struct{}) { sendLine(p.lines, line, done) },
		end:  func() { close(p.lines) },
	})
	p.addr = p.expect(t, "ready ")
	return p
}

// TestRelayHelper is not a test: run by TestRelayMembersInNamespaces
// with relayHelperEnv set, it runs a relay on TCP port 4001 with the
// stranger limit and members given, prints "ready <ID>" and answers
// "stats" on stdin with "stats: <peer.RelayStats as JSON>".
func TestRelayHelper(t *testing.T) {
	spec := os.Getenv(relayHelperEnv)
	if spec == "" {
		t.Skip("a helper process of TestRelayMembersInNamespaces")
	}
	f := strings.Split(spec, ",")
	d, err := time.ParseDuration(f[0])
	if err != nil {
		t.Fatal(err)
	}
	data, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var members []libp2ppeer.ID
	for _, s := range f[2:] {
		id, err := libp2ppeer.Decode(s)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, id)
	}
	n := newNode(t, peer.WithListenAddrs("/ip4/0.0.0.0/tcp/4001"), peer.WithRelayService(true),
		peer.WithRelayStrangerLimit(d, data), peer.WithRelayMembers(members...))
	fmt.Println("ready " + n.ID().String())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "stats" {
			b, _ := json.Marshal(n.RelayStats())
			fmt.Printf("stats: %s\n", b)
		}
	}
}
