package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/peer"
)

// relayDHTHelperEnv makes the test binary the bootstrap peer of
// TestRelayFoundThroughTheDHTInNamespaces (TestRelayDHTHelper).
const relayDHTHelperEnv = "TROUPE_RELAY_DHT_HELPER"

// TestRelayFoundThroughTheDHTInNamespaces: a laptop behind a NAT with no
// relay in its config, whose dial budget (one peer) its DHT bootstrap
// peer fills, so that the rendezvous connects it to no one else, and a
// relay on the public network that is a DHT client with a full budget
// too (neither the DHT's traffic nor its rendezvous connects them). The
// bootstrap peer tells both whether they are reachable (AutoNAT, no
// relay of its own). The relay provides itself under the mesh's relay
// key once public; the laptop, private, finds it there and reserves a
// slot: its addresses include a circuit through the relay.
func TestRelayFoundThroughTheDHTInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary and creates network namespaces")
	}
	t.Parallel() // ~20 s waiting for AutoNAT and a reservation; no duration asserted
	n := newNetns(t)
	public, homes := n.natWorld(2, false)
	boot := startHelperProc(t, public[1], "TestRelayDHTHelper", relayDHTHelperEnv+"=1")
	bootAddr := "/ip4/11.0.0.2/tcp/4001/p2p/" + boot.addr
	base := `, "dht": "client", "bootstrap": ["` + bootAddr + `"], "connections": {"low": 1, "high": 8}`
	relay := natDaemon(t, public[0], "ip4", base+`, "relay_service": true`)
	start := time.Now()
	lap := natDaemon(t, homes[0].laptop, "ip4", base)
	relayTCP := "/ip4/11.0.0.1/tcp/"
	eventually(t, 90*time.Second, "the laptop learns it is private and reserves a slot on the relay it found in the DHT", func() bool {
		id := natID(t, lap)
		for _, addr := range id.Addrs {
			if strings.Contains(addr, "/p2p/"+relay.id.String()+"/p2p-circuit") && strings.HasPrefix(addr, relayTCP) && id.Reachability == "private" {
				return true
			}
		}
		return false
	})
	t.Logf("the laptop reserved on the relay %v after it started", time.Since(start).Round(time.Millisecond))
}

// TestRelayDHTHelper is not a test: run by
// TestRelayFoundThroughTheDHTInNamespaces with relayDHTHelperEnv set, it
// runs the first DHT peer of the default mesh on TCP port 4001 with an
// AutoNAT service and no relay, and prints "ready <ID>".
func TestRelayDHTHelper(t *testing.T) {
	if os.Getenv(relayDHTHelperEnv) == "" {
		t.Skip("a helper process of TestRelayFoundThroughTheDHTInNamespaces")
	}
	n := newNode(t, peer.WithListenAddrs("/ip4/0.0.0.0/tcp/4001"), peer.WithMesh("default"), peer.WithGroups(true),
		peer.WithDHT(), peer.WithAutoNATService(true))
	fmt.Println("ready " + n.ID().String())
	_, _ = os.Stdin.Read(make([]byte, 1)) // until the test ends
}
