package integration

import (
	"bufio"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/routing"
)

// floodRSSBound is how far the process's peak RSS may rise over its
// baseline while a peer floods a node with messages its actors never
// take (docs/trust.md).
const floodRSSBound = 256 << 20

// TestFloodCostsBoundedMemory: a peer sends 2 GiB (256 MiB under -race)
// of 1 MiB messages, every other one of a type the node does not know
// (dead letters at once) and the rest of a known type to an actor that
// does not receive them. The process's peak RSS stays within
// floodRSSBound of its baseline (the flooding peer is in the process
// too, writing from one buffer), another peer's asks are answered
// quickly meanwhile, and every message the node accepted for the
// hoarding actor reaches it once it receives.
func TestFloodCostsBoundedMemory(t *testing.T) {
	total := 2 << 30
	p99Bound := 100 * time.Millisecond
	if raceEnabled {
		total, p99Bound = 256<<20, 500*time.Millisecond
	}
	hostile, b := pair(t)
	honest := newNode(t)
	connect(t, b, honest)
	echoRef := spawn(t, b, "echo", echo)
	drained := make(chan int, 1)
	spawn(t, b, "hoard", func(c *actor.Context) {
		c.Receive(actor.On(func(Crash) { // then takes all it was sent
			n := 0
			var h actor.Case
			h = actor.Any(func(m any) {
				if _, ok := m.(Blob); ok {
					n++
				} else {
					drained <- n
				}
				c.Receive(h)
			})
			c.Receive(h)
		}))
	})
	ctx, cancel := askCtx()
	defer cancel()
	if _, err := honest.System().Ask(ctx, echoRef, Ping{0}); err != nil {
		t.Fatal(err)
	}
	resetPeakRSS(t)
	baseline := rss(t, "VmRSS")

	fw := honestHello(t, hostile, b, routing.ProtoMsg)
	reg := registry(t)
	_, blob, err := reg.Encode(Blob{Data: make([]byte, 1<<20-64)})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	blobs, unknowns := 0, 0
	go func() {
		for i := 0; i*len(blob) < total; i++ {
			env := &codec.Envelope{Kind: codec.KindUser, To: "hoard", FromName: "x", Type: "test.Blob", Body: blob}
			if i%2 == 1 {
				env.Type = "elsewhere.Unknown"
				unknowns++
			} else {
				blobs++
			}
			if err := fw.WriteEnvelope(env); err != nil {
				sent <- err
				return
			}
		}
		sent <- fw.Flush()
	}()
	var lat []time.Duration
	for done := false; !done; {
		start := time.Now()
		actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := honest.System().Ask(actx, echoRef, Ping{len(lat)})
		acancel()
		if err != nil {
			t.Fatalf("ask %d during the flood: %v", len(lat), err)
		}
		lat = append(lat, time.Since(start))
		select {
		case err := <-sent:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
		}
	}
	// Then, on the same stream: Crash makes the hoarder take what it holds,
	// up to the Greeting.
	for _, m := range []any{Crash{}, Greeting{}} {
		typ, body, err := reg.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindUser, To: "hoard", FromName: "x", Type: typ, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	kept := recv(t, drained)
	peak := rss(t, "VmHWM")
	slices.Sort(lat)
	p99 := lat[len(lat)*99/100]
	st := b.Router().Stats()
	overflows := int(b.System().MailboxOverflows())
	t.Logf("flood of %d MiB: peak RSS %d MiB over a baseline of %d MiB; %d asks meanwhile, p50 %v, p99 %v; %d blobs kept, %d refused, %d of unknown type",
		total>>20, (peak-baseline)>>20, baseline>>20, len(lat), lat[len(lat)/2], p99, kept, overflows, st.UnknownTypes)
	if peak-baseline > floodRSSBound {
		t.Errorf("peak RSS rose %d MiB over the baseline, want at most %d", (peak-baseline)>>20, floodRSSBound>>20)
	}
	if p99 > p99Bound {
		t.Errorf("ask p99 %v during the flood, want at most %v", p99, p99Bound)
	}
	if kept+overflows != blobs || kept == 0 {
		t.Errorf("%d blobs kept and %d refused, of %d sent: want all accounted for, some kept", kept, overflows, blobs)
	}
	if int(st.UnknownTypes) != unknowns {
		t.Errorf("%d messages of an unknown type counted, %d sent", st.UnknownTypes, unknowns)
	}
}

// rss returns a field of /proc/self/status (VmRSS, VmHWM), in bytes.
func rss(t *testing.T, field string) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS resets VmHWM to the current RSS (Linux's clear_refs 5).
func resetPeakRSS(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}
