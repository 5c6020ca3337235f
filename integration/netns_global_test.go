package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
)

// globalHelperEnv makes the test binary a mesh-wide name peer
// (TestGlobalNameHelper) for TestGlobalNameHealInNamespaces.
const globalHelperEnv = "TROUPE_GLOBAL_HELPER"

// Two partitions of two peers, each in its own network namespace, on two
// bridges; a peer of each side claims the same mesh-wide name. The
// partition heals (the second side's ports move to the first bridge, and
// a peer of each side connects): every peer resolves the same single
// holder, and the loser's actor was told.
func TestGlobalNameHealInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: creates network namespaces")
	}
	nn := newNetns(t)
	hosts := nn.lan(4) // on br0; the second side moves to br1 below
	br := nn.prefix + "br"
	nn.ip("-n", br, "link", "add", "br1", "type", "bridge")
	nn.ip("-n", br, "link", "set", "br1", "up")
	for _, port := range []string{"p3", "p4"} {
		nn.ip("-n", br, "link", "set", port, "master", "br1")
	}
	peers := make([]*globalPeer, len(hosts))
	for i, h := range hosts {
		peers[i] = startGlobalPeer(t, h, fmt.Sprintf("/ip4/10.231.0.%d/tcp/0", i+1))
	}
	peers[1].do(t, "connect "+peers[0].addr, "connected")
	peers[3].do(t, "connect "+peers[2].addr, "connected")
	left := peers[0].do(t, "claim", "claimed ")
	right := peers[2].do(t, "claim", "claimed ")
	peers[1].expect(t, "winner "+left)
	peers[3].expect(t, "winner "+right)

	// Heal.
	for _, port := range []string{"p3", "p4"} {
		nn.ip("-n", br, "link", "set", port, "master", "br0")
	}
	peers[1].do(t, "connect "+peers[2].addr, "connected")
	var winner string
	testutil.EventuallyNil(t, 20*time.Second, func() error { // the heal is inside other processes
		w0, w2 := peers[0].do(t, "winner", "is "), peers[2].do(t, "winner", "is ")
		if w0 != w2 || (w0 != left && w0 != right) {
			return fmt.Errorf("the sides still disagree: %s and %s", w0, w2)
		}
		winner = w0
		return nil
	})
	for _, p := range peers {
		p.do(t, "winner", "is "+winner)
	}
	loser := peers[2]
	if winner == right {
		loser = peers[0]
	}
	loser.expect(t, "lost "+winner)
}

// globalPeer is a TestGlobalNameHelper process in a namespace.
type globalPeer struct {
	stdin io.Writer
	lines chan string
	seen  []string // lines read that matched nothing yet
	addr  string   // its /p2p/ address
}

func startGlobalPeer(t *testing.T, ns, listen string) *globalPeer {
	t.Helper()
	return startHelperProc(t, ns, "TestGlobalNameHelper", globalHelperEnv+"="+listen)
}

// expect returns the rest of the first line, seen before or next, that
// starts with prefix, keeping the others for later, failing after 20 s.
func (p *globalPeer) expect(t *testing.T, prefix string) string {
	t.Helper()
	for i, line := range p.seen {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			p.seen = append(p.seen[:i], p.seen[i+1:]...)
			return rest
		}
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("helper ended before %q", prefix)
			}
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return rest
			}
			p.seen = append(p.seen, line)
		case <-deadline:
			t.Fatalf("no %q within 20 s", prefix)
		}
	}
}

// do sends a command and returns what follows prefix in its answer; a
// "winner" command is asked again until the answer matches (the heal is
// inside other processes), for at most 20 s.
func (p *globalPeer) do(t *testing.T, cmd, prefix string) string {
	t.Helper()
	var rest string
	ask := func() error {
		if _, err := fmt.Fprintln(p.stdin, cmd); err != nil {
			t.Fatal(err)
		}
		line := p.expect(t, cmd+": ")
		var ok bool
		if rest, ok = strings.CutPrefix(line, prefix); !ok {
			return fmt.Errorf("%s: %s, want %s…", cmd, line, prefix)
		}
		return nil
	}
	if cmd != "winner" {
		if err := ask(); err != nil {
			t.Fatal(err)
		}
		return rest
	}
	testutil.EventuallyNil(t, 20*time.Second, ask)
	return rest
}

// TestGlobalNameHelper is not a test: run by TestGlobalNameHealInNamespaces
// with globalHelperEnv set to a listen address, it runs a peer and obeys
// commands on stdin (connect ADDR, claim, winner), answering each on
// stdout as "<command>: <answer>", and prints "winner REF" when the
// holder it resolves changes and "lost REF" when its claim lost.
func TestGlobalNameHelper(t *testing.T) {
	listen := os.Getenv(globalHelperEnv)
	if listen == "" {
		t.Skip("a helper process of TestGlobalNameHealInNamespaces")
	}
	n := newNode(t, peer.WithListenAddrs(listen), peer.WithMesh("gnet"), peer.WithGroups(true),
		peer.WithAdvertisements(50*time.Millisecond, 5*time.Second))
	out := make(chan string, 16)
	addr := n.AddrInfo().Addrs[0].Encapsulate(ma.StringCast("/p2p/" + n.ID().String()))
	fmt.Println("ready " + addr.String())
	go func() {
		for line := range out {
			fmt.Println(line)
		}
	}()
	go func() { // the holder it resolves
		var last actor.Ref
		for {
			if ref, ok := n.WhereisGlobal("leader"); ok && ref != last {
				last = ref
				out <- "winner " + ref.String()
			}
			time.Sleep(50 * time.Millisecond) // no event tells of a new resolution of the name
		}
	}()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd := sc.Text()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		switch {
		case strings.HasPrefix(cmd, "connect "):
			ai, err := libp2ppeer.AddrInfoFromString(strings.TrimPrefix(cmd, "connect "))
			if err == nil {
				err = n.Connect(ctx, *ai)
			}
			out <- fmt.Sprintf("%s: %s", cmd, okOr(err, "connected"))
		case cmd == "claim":
			ref, err := n.System().Spawn("holder", func(c *actor.Context) {
				c.Receive(actor.On(func(m peer.GlobalNameLost) { out <- "lost " + m.Winner.String() }))
			})
			if err == nil {
				err = n.ClaimGlobal(ctx, "leader", ref)
			}
			out <- fmt.Sprintf("claim: %s", okOr(err, "claimed "+ref.String()))
		case cmd == "winner":
			ref, _ := n.WhereisGlobal("leader")
			out <- "winner: is " + ref.String()
		}
		cancel()
	}
}

func okOr(err error, ok string) string {
	if err != nil {
		return "error " + err.Error()
	}
	return ok
}
