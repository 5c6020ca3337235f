package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// natAsks is laptop A's traffic to the echo actor of laptop B in
// TestLaptopsBehindNATs: numbered asks, one after another, each answered
// with its own number before the next goes, so that a reply to ask n says
// that asks 0 to n reached B's echo, in order. A reply that came twice
// (its ask was over) would be a dead letter on A; a request B's echo got
// twice would be answered twice: dead letters tell both (noneTwice).
type natAsks struct {
	t    *testing.T
	a, b *daemonProc
	next int       // the number of the next ask
	rtts []float64 // of each ask, as A's daemon timed it
	dead [2]uint64 // A's and B's dead letters before the first ask
}

// newNatAsks starts A's asks to B's echo, noting the dead letters of both
// (the latest samples of their mesh views, up to a second old: newer ones
// would count against the asks).
func newNatAsks(t *testing.T, a, b *daemonProc) *natAsks {
	t.Helper()
	return &natAsks{t: t, a: a, b: b, dead: [2]uint64{natDeadLetters(t, a, false), natDeadLetters(t, b, false)}}
}

// ask asks B's echo actor with the next number.
func (s *natAsks) ask() {
	s.t.Helper()
	want := fmt.Sprintf(`"ask %d"`, s.next)
	var r struct {
		Reply json.RawMessage `json:"reply"`
		RTTMS float64         `json:"rtt_ms"`
	}
	cliJSON(s.t, s.a.home, &r, "ask", s.b.id.String()+"/echo", want)
	if string(r.Reply) != want {
		s.t.Fatalf("ask %d of %s/echo: reply %s", s.next, s.b.id, r.Reply)
	}
	s.rtts = append(s.rtts, r.RTTMS)
	s.next++
}

// askN asks n times.
func (s *natAsks) askN(n int) {
	s.t.Helper()
	for range n {
		s.ask()
	}
}

// natAskPace is the least time from one ask of until to the next. The
// relay lets each circuit carry 128 KiB (libp2p's default), and asks
// without a pause, some fifty a second without -race, drain it within
// half a minute if the connection stays relayed: the relay then ends the
// circuit, and the test fails with a node down or a loss declared rather
// than with the hole punch that did not come. Four a second stay well
// below it for as long as until waits.
const natAskPace = 250 * time.Millisecond

// until asks on, one ask every natAskPace at most, until cond, checked
// after each ask, holds; it reports whether cond held within within.
func (s *natAsks) until(within time.Duration, cond func() bool) bool {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		next := time.Now().Add(natAskPace)
		s.ask()
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Until(next))
	}
}

// p50 is the median round trip of asks from to to-1.
func (s *natAsks) p50(from, to int) float64 {
	rtts := slices.Clone(s.rtts[from:to])
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}

// max is the longest round trip of asks from to to-1.
func (s *natAsks) max(from, to int) float64 { return slices.Max(s.rtts[from:to]) }

// noneTwice checks that A and B have the dead letters they had before
// the first ask, in samples of their mesh views taken after the last one.
func (s *natAsks) noneTwice() {
	s.t.Helper()
	for i, d := range []*daemonProc{s.a, s.b} {
		if n := natDeadLetters(s.t, d, true); n != s.dead[i] {
			_, list, _ := cli(s.t, d.home, "deadletters") // which message, and why: the failure says it
			s.t.Fatalf("after %d asks, %s has %d dead letters, %d before: a reply or a request came twice?\n%s", s.next, "AB"[i:i+1], n, s.dead[i], list)
		}
	}
}

// across asks across the hole punch of TestLaptopsBehindNATs, after the
// connection through the relay (at connecting) and the first ask: it asks
// until the connection is direct, then (mustMove: the connection was
// still relayed after the first ask, so its streams were opened on the
// relay) until each laptop ended a link's stream on the relay cleanly
// (moved_off_relay), and 10 more; each is answered in turn, and none
// twice. Then the relay dies, and 10 asks more are answered. Watchers on
// both laptops, told right after the first ask, show that no loss was
// declared between them from then on, across the move off the relay and
// the relay's death: it would take the other laptop's actors down.
func (s *natAsks) across(relay *daemonProc, connecting time.Time, punched func() uint64, mustMove bool) {
	t := s.t
	t.Helper()
	peerA, peerB := s.a.id.String(), s.b.id.String()
	opened, from := time.Now(), s.next
	late := opened.Sub(connecting)
	// Each laptop counts the attempts it took part in; B, which accepted
	// the relayed connection, starts them.
	punches := func() string {
		pa, pb := natID(t, s.a).HolePunches, natID(t, s.b).HolePunches
		return fmt.Sprintf("hole punches tried %d, succeeded %d on A; tried %d, succeeded %d on B", pa.Tried, pa.Succeeded, pb.Tried, pb.Succeeded)
	}
	natWatch(t, s.a, peerB+"/echo")
	natWatch(t, s.b, peerA+"/info")
	if !s.until(30*time.Second, func() bool {
		relayed, connected := relayedTo(t, s.a, peerB)
		return connected && !relayed
	}) {
		t.Fatalf("A's connection to B not direct within 30s, %v after the relayed connection (%d asks in all; %s)",
			late.Round(time.Millisecond), s.next, punches())
	}
	direct, atDirect := time.Since(opened), s.next
	if punched() == 0 {
		t.Fatal("a direct connection, but no hole punch succeeded")
	}
	if mustMove && !s.until(30*time.Second, func() bool {
		return natID(t, s.a).MovedOffRelay > 0 && natID(t, s.b).MovedOffRelay > 0
	}) {
		t.Fatalf("not within 30s of the direct connection (%d asks in all): both laptops end a link's stream on the relay", s.next)
	}
	if !mustMove { // punched before the check after the first ask
		t.Logf("direct before the check after the first ask: no stream had to move (moved off the relay: A %d, B %d)",
			natID(t, s.a).MovedOffRelay, natID(t, s.b).MovedOffRelay)
	}
	moved := s.next
	s.askN(10)
	if relayed, connected := relayedTo(t, s.a, peerB); !connected || relayed {
		t.Fatalf("after moving off the relay: connected %v, relayed %v", connected, relayed)
	}
	if err := relay.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*daemonProc{s.a, s.b} {
		eventually(t, 10*time.Second, "the laptops see the relay gone", func() bool {
			_, connected := relayedTo(t, d, relay.id.String())
			return !connected
		})
	}
	s.askN(10)
	natNoDown(t, s.a, peerB)
	natNoDown(t, s.b, peerA)
	s.noneTwice()
	t.Logf("direct %v after the first ask (asks %d-%d meanwhile); asks went on to ask %d before the move check ended; "+
		"ask p50 direct %.3f ms (asks %d-%d); %d asks, each answered once and in turn, the longest %.1f ms",
		direct.Round(time.Millisecond), from, atDirect-1, moved-1, s.p50(moved, s.next), moved, s.next-1, s.next, s.max(0, s.next))
}

// natWatch has d's watcher monitor ref ("<peer>/<name>"): d prints
// "down <ref> <reason>" when it stops, or when a loss declared between the
// peers takes it down.
func natWatch(t *testing.T, d *daemonProc, ref string) {
	t.Helper()
	if out := cliOK(t, d.home, "ask", d.id.String()+"/watcher", fmt.Sprintf(`{"Ref": %q}`, ref), "--type", "troupe.Watch"); strings.TrimSpace(out) != "true" {
		t.Fatalf("watch %s: %q", ref, out)
	}
	d.expectLine(t, 10*time.Second, "watching "+ref)
}

// natNoDown checks that d's watcher printed no Down of peer's actors. It
// has d's watcher monitor an actor d does not have, which goes down at
// once: a Down that came before is printed before that one.
func natNoDown(t *testing.T, d *daemonProc, peer string) {
	t.Helper()
	nobody := d.id.String() + "/nobody"
	natWatch(t, d, nobody)
	d.expectLine(t, 10*time.Second, "down "+nobody+" ")
	for _, line := range d.seen {
		if strings.HasPrefix(line, "down "+peer+"/") {
			t.Fatalf("%s: a loss was declared between the laptops", line)
		}
	}
}

// natDeadLetters reads d's dead letters from its mesh view: the latest
// sample, or with fresh one taken after this call began.
func natDeadLetters(t *testing.T, d *daemonProc, fresh bool) uint64 {
	t.Helper()
	n := "1"
	if fresh {
		n = "2" // the first is the latest, the second the next one
	}
	out := strings.TrimSpace(cliOK(t, d.home, "top", "-n", n, "--json"))
	var v struct {
		DeadLetters *uint64 `json:"dead_letters"`
	}
	if err := json.Unmarshal([]byte(out[strings.LastIndexByte(out, '\n')+1:]), &v); err != nil || v.DeadLetters == nil {
		t.Fatalf("troupe top --json: %q: %v", out, err)
	}
	return *v.DeadLetters
}
