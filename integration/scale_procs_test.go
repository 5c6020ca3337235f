package integration

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	tpeer "github.com/troupe-mesh/troupe/peer"
)

// A scale run in several processes: the benchmark's process runs the
// first share of the peers (the bootstrap peer among them) and measures
// them; each helper process (this test binary run as TestScaleHelper)
// runs another share of peers of the same mesh, with the same options
// and actors, and nothing else, until the benchmark closes its stdin.

const scaleHelperEnv = "TROUPE_SCALE_HELPER" // offset,count,ttl,memberEvery,bootstrap multiaddr

// scaleHelpers starts spec.procs-1 helper processes that run the peers
// local.. of the mesh, and returns a function that waits until all of
// them started theirs.
func scaleHelpers(b *testing.B, spec scaleSpec, boot peer.AddrInfo, local int) (wait func()) {
	addrs, err := peer.AddrInfoToP2pAddrs(&boot)
	if err != nil || len(addrs) == 0 {
		b.Fatalf("bootstrap address of %v: %v", boot, err)
	}
	per := (spec.n - local) / (spec.procs - 1)
	ready := make(chan error, spec.procs)
	for k := range spec.procs - 1 {
		offset, count := local+k*per, per
		if k == spec.procs-2 {
			count = spec.n - offset
		}
		started := false
		startHelper(b, helperSpec{
			test: "TestScaleHelper", flags: []string{"-test.timeout=0"},
			env:   []string{fmt.Sprintf("%s=%d,%d,%d,%d,%s", scaleHelperEnv, offset, count, spec.adTTL, spec.memberEvery, addrs[0])},
			grace: time.Minute, // the helper closes its peers and exits
			line: func(line string, _ <-chan struct{}) {
				if !started && strings.HasPrefix(line, "scale-helper ready") {
					started = true
					ready <- nil
				}
			},
			end: func() {
				if !started {
					ready <- fmt.Errorf("helper %d (peers %d..%d) exited before its peers started", k, offset, offset+count-1)
				}
			},
		})
	}
	return func() {
		timeout := time.After(20 * time.Minute)
		for range spec.procs - 1 {
			select {
			case err := <-ready:
				if err != nil {
					b.Fatal(err)
				}
			case <-timeout:
				b.Fatal("helpers did not start their peers within 20 minutes")
			}
		}
	}
}

// TestScaleHelper is a helper process of a scale run in several
// processes; it skips unless TROUPE_SCALE_HELPER is set.
func TestScaleHelper(t *testing.T) {
	spec := os.Getenv(scaleHelperEnv)
	if spec == "" {
		t.Skip("a helper process of the scale benchmarks")
	}
	f := strings.SplitN(spec, ",", 5)
	if len(f) != 5 {
		t.Fatalf("%s=%q: want offset,count,ttl,memberEvery,bootstrap", scaleHelperEnv, spec)
	}
	offset, err1 := strconv.Atoi(f[0])
	count, err2 := strconv.Atoi(f[1])
	ttl, err3 := strconv.ParseInt(f[2], 10, 64)
	every, err4 := strconv.Atoi(f[3])
	ma, err5 := multiaddr.NewMultiaddr(f[4])
	if err := firstErr(err1, err2, err3, err4, err5); err != nil {
		t.Fatalf("%s=%q: %v", scaleHelperEnv, spec, err)
	}
	boot, err := peer.AddrInfoFromP2pAddr(ma)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*tpeer.Node
	for range count {
		nodes = append(nodes, newNodeWithin(t, time.Minute, scaleOpts(t, time.Duration(ttl), tpeer.WithDHT(*boot))...))
	}
	t.Cleanup(func() { closeAll(nodes) })
	scaleActors(t, nodes, offset, every, func(Stamp) {})
	fmt.Println("scale-helper ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark is done
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
