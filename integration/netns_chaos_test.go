//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// chaosHealBound is how soon after the heal an ask must be answered
// again. The target is 5 s; over this link a redial and the
// first ask take ~9 round trips (0.2–0.3 s each) and TCP's timeouts
// for what is lost (1 s for a SYN), after the wait for the redialer's
// next try: measured 1.1–2.5 s (2.1–9.4 s before the redial deferral,
// docs/reliability.md), so CI fails only past twice the target.
const chaosHealBound = 10 * time.Second

// chaosHold is how long the partition lasts after both sides declared
// it: the redials meanwhile fail, and their timing is what the heal
// meets.
const chaosHold = 4 * time.Second

// chaosPlan is one TestChaos run's size: CI's is short, the issue's
// (10,000 asks, several runs) is behind TROUPE_LONG_TESTS=1.
type chaosPlan struct {
	asks, lanes int
	liveness    time.Duration // both sides' liveness timeout
	flapUp      time.Duration // the link works this long ...
	flapDown    time.Duration // ... then is cut this long, over and over,
	longCut     time.Duration // every third cut this long (past liveness: NodeDown)
	askTimeout  time.Duration // of each ask: a timeout is a silent loss
}

func chaosPlanned() chaosPlan {
	p := chaosPlan{asks: 1_000, lanes: 50, liveness: 4 * time.Second,
		flapUp: 3 * time.Second, flapDown: 1500 * time.Millisecond, longCut: 6 * time.Second, askTimeout: 30 * time.Second}
	if os.Getenv("TROUPE_LONG_TESTS") == "1" {
		p.asks, p.lanes = 10_000, 50
	}
	return p
}

// TestChaos: two nodes in namespaces joined by a bad link (chaosLink:
// 5 % loss, 100 ms ± 50 ms, 1 % reordered, 1 % duplicated, each way,
// and cut every flapUp in turns as chaosFlap says), one asking the
// other's echo from many goroutines at once and sending each number it
// asked to the other's seq actor after the ask
// (netns_chaos_peer_test.go). Every ask ends in its own reply,
// ErrNodeDown or ErrUnreachable (no timeout, no wrong reply, no other
// error), no number of a goroutine arrives after a later one, and
// every send that did not arrive is covered by a Down for the sender's
// node before the next arrival (or at the end). Then the link is cut
// for good: both sides' monitors fire NodeDown within 2 × the liveness
// timeout, and once it is restored an ask is answered within
// chaosHealBound.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: creates network namespaces and starts processes")
	}
	plan := chaosPlanned()
	n := newNetns(t)
	nsA, nsB := n.add("ca"), n.add("cb")
	link := newChaosLink(t, n, nsA, nsB)

	b := startChaosPeer(t, nsB, "b", plan.liveness, "")
	bID := strings.TrimPrefix(b.expect(t, 20*time.Second, "hello "), "hello ")
	a := startChaosPeer(t, nsA, "a", plan.liveness, fmt.Sprintf("/ip4/%s/tcp/%d/p2p/%s", chaosAddr(1), chaosPort, bID))
	aID := strings.TrimPrefix(a.expect(t, 20*time.Second, "hello "), "hello ")
	b.send(t, "anchor "+aID)
	watch := func() {
		t.Helper()
		for _, p := range []*chaosPeer{a, b} {
			p.send(t, "watch")
			p.expect(t, 10*time.Second, "watching")
		}
	}
	watch()

	link.set(chaosImpairment)
	flaps := make(chan struct{})
	var flapped sync.WaitGroup
	var flapErr error
	var cuts int
	flapped.Go(func() { cuts, flapErr = chaosFlap(link, nsA, plan, flaps) })
	stopFlaps := sync.OnceFunc(func() { close(flaps); flapped.Wait() })
	t.Cleanup(stopFlaps) // before the link and the namespaces go, if the run fails
	a.send(t, fmt.Sprintf("run %d %d %s", plan.asks, plan.lanes, plan.askTimeout))
	var res chaosResult
	a.expectJSON(t, 15*time.Minute, "result ", &res)
	stopFlaps()
	if flapErr != nil {
		t.Fatal(flapErr)
	}
	b.send(t, "report")
	var rep struct {
		Seq         chaosSeqState
		Echo        chaosEchoState
		DeadLetters uint64
	}
	b.expectJSON(t, 10*time.Second, "report ", &rep)
	t.Logf("a: %+v", res)
	t.Logf("b: seq %+v, echo %+v, dead letters %d", rep.Seq, rep.Echo, rep.DeadLetters)
	t.Logf("link: %d packets carried, %d dropped, %d cuts", link.carried.Load(), link.dropped.Load(), cuts)
	checkChaos(t, res, rep.Seq, rep.Echo)
	if rep.Seq.Downs == 0 { // the long cut comes first, while any run lasts
		t.Errorf("no NodeDown during the run (%d cuts): the loss protocol was not exercised", cuts)
	}

	// A partition: NodeDown on both sides within 2 × liveness.
	a.drain()
	b.drain()
	watch()
	link.setCut(true)
	cut := time.Now()
	bound := 2 * plan.liveness
	downA := a.expectDown(t, bound, cut)
	downB := b.expectDown(t, bound-time.Since(cut), cut)
	time.Sleep(chaosHold) // the partition's length, not a wait for an event
	link.setCut(false)
	healed := time.Now()
	a.send(t, "heal")
	var conn time.Duration = -1
	var at string
	for at == "" {
		line := a.expect(t, chaosHealBound-time.Since(healed), "")
		switch f := strings.Fields(line); f[0] {
		case "connected":
			if conn < 0 {
				ns, _ := strconv.ParseInt(f[1], 10, 64)
				conn = time.Unix(0, ns).Sub(healed)
			}
		case "healed":
			at = line
		}
	}
	ns, _ := strconv.ParseInt(strings.TrimPrefix(at, "healed "), 10, 64)
	heal := time.Unix(0, ns).Sub(healed)
	if heal > 5*time.Second {
		t.Logf("asks work again %v after the heal: over the issue's 5 s target", heal.Round(time.Millisecond))
	}
	var syns [2]int
	for _, e := range link.synsSince(cut) { // when each side dialed, relative to the heal
		if !e.ack {
			syns[e.from]++
		}
		if heal > 5*time.Second {
			t.Logf("SYN from %c port %d at %+v (ack %v, dropped %v)", 'a'+e.from, e.srcPort, e.at.Sub(healed).Round(time.Millisecond), e.ack, e.dropped)
		}
	}
	t.Logf("dials since the cut (SYNs, retransmissions included): from a %d, from b %d", syns[0], syns[1])
	t.Logf("chaos %d asks in %.1f s: replies %d, ErrNodeDown %d, ErrUnreachable %d; sends %d, arrived %d, lost with a Down %d; NodeDowns during it: a→b %d; partition NodeDown a %v, b %v; connected again %v, asks again %v after the heal",
		res.Asks, res.Seconds, res.Replies, res.NodeDown, res.Unreachable, res.Sends, rep.Seq.Received, rep.Seq.Covered+chaosTail(res, rep.Seq),
		rep.Seq.Downs, downA.Round(time.Millisecond), downB.Round(time.Millisecond), conn.Round(time.Millisecond), heal.Round(time.Millisecond))
}

// chaosFlap cuts the link after every plan.flapUp until stop is closed,
// and returns how many cuts it began: of every three cuts, the first
// drops every packet for longCut (past the liveness timeout: NodeDown;
// first, so that even a short run meets it), the second for flapDown
// (an iptables DROP: nothing fails), the third sets a's tun0 down for
// flapDown (its route goes: sends and dials fail at once).
func chaosFlap(link *chaosLink, nsA string, plan chaosPlan, stop <-chan struct{}) (cuts int, err error) {
	ifc := func(state string) error {
		if out, err := exec.Command("ip", "-n", nsA, "link", "set", "tun0", state).CombinedOutput(); err != nil {
			return fmt.Errorf("ip link set tun0 %s: %v: %s", state, err, out)
		}
		return nil
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return i, nil
		case <-time.After(plan.flapUp): // the schedule, not a wait for an event
		}
		down, restore := plan.flapDown, func() error { link.setCut(false); return nil }
		switch i % 3 {
		case 0:
			down = plan.longCut
			link.setCut(true)
		case 1:
			link.setCut(true)
		case 2:
			if err := ifc("down"); err != nil {
				return i, err
			}
			restore = func() error { return ifc("up") }
		}
		select {
		case <-stop:
			return i + 1, restore()
		case <-time.After(down):
		}
		if err := restore(); err != nil {
			return i + 1, err
		}
	}
}

// checkChaos asserts what the run's counts must say.
func checkChaos(t *testing.T, res chaosResult, seq chaosSeqState, echo chaosEchoState) {
	t.Helper()
	if res.Replies+res.NodeDown+res.Unreachable != res.Asks || res.Wrong+res.Timeouts+len(res.OtherErrs) != 0 {
		t.Errorf("asks: %d replies + %d ErrNodeDown + %d ErrUnreachable of %d; %d wrong replies, %d timeouts, other errors %q",
			res.Replies, res.NodeDown, res.Unreachable, res.Asks, res.Wrong, res.Timeouts, res.OtherErrs)
	}
	if seq.Reorders+echo.Reorders != 0 {
		t.Errorf("%d sends and %d asks arrived after a later one of their goroutine", seq.Reorders, echo.Reorders)
	}
	if seq.Silent != 0 {
		t.Errorf("%d sends lost with no Down before the next arrival", seq.Silent)
	}
	tail := 0
	for lane := range res.Lanes {
		if missing, covered := seq.tail(lane, res.PerLane); missing > 0 && !covered {
			t.Errorf("the last %d sends of goroutine %d never arrived, with no Down after its last arrival", missing, lane)
		} else {
			tail += missing
		}
	}
	if got := seq.Received + seq.Covered + tail; got != res.Sends || res.SendErrs != 0 {
		t.Errorf("sends: %d arrived + %d lost with a Down + %d at the end with a Down = %d, of %d sent (%d refused)",
			seq.Received, seq.Covered, tail, got, res.Sends, res.SendErrs)
	}
	if echo.Asks < res.Replies {
		t.Errorf("echo saw %d asks, a got %d replies", echo.Asks, res.Replies)
	}
}

// chaosTail is how many sends never arrived at the end of their lane.
func chaosTail(res chaosResult, seq chaosSeqState) (tail int) {
	for lane := range res.Lanes {
		missing, _ := seq.tail(lane, res.PerLane)
		tail += missing
	}
	return tail
}

// chaosPeer is a running side of TestChaos.
type chaosPeer struct {
	stdin io.Writer
	lines chan string // the "chaos " lines, prefix removed
}

func startChaosPeer(t *testing.T, ns, role string, liveness time.Duration, peerAddr string) *chaosPeer {
	t.Helper()
	p := &chaosPeer{lines: make(chan string, 1000)}
	p.stdin = startHelper(t, helperSpec{
		ns: ns, test: "TestChaosPeer",
		env: []string{"TROUPE_CHAOS_ROLE=" + role, "TROUPE_CHAOS_LIVENESS=" + liveness.String(), "TROUPE_CHAOS_PEER=" + peerAddr},
		line: func(line string, done <-chan struct{}) {
			if rest, ok := strings.CutPrefix(line, "chaos "); ok {
				sendLine(p.lines, rest, done)
			} else {
				fmt.Fprintf(os.Stderr, "%s: %s\n", role, line)
			}
		},
		end: func() { close(p.lines) },
	})
	return p
}

func (p *chaosPeer) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, cmd); err != nil {
		t.Fatal(err)
	}
}

// expect returns the first line starting with prefix within d, logging
// the lines it passes over (reorders and silent losses are counted too).
func (p *chaosPeer) expect(t *testing.T, d time.Duration, prefix string) string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("the peer ended before %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
			t.Log(line)
		case <-deadline:
			t.Fatalf("no %q within %v", prefix, d)
		}
	}
}

func (p *chaosPeer) expectJSON(t *testing.T, d time.Duration, prefix string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(strings.TrimPrefix(p.expect(t, d, prefix), prefix)), v); err != nil {
		t.Fatal(err)
	}
}

// expectDown waits for the peer's first Down after since and returns
// how long after since it came (a Down from before, of the chaos phase,
// is passed over).
func (p *chaosPeer) expectDown(t *testing.T, d time.Duration, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		f := strings.Fields(p.expect(t, time.Until(deadline), "down "))
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if at := time.Unix(0, ns); !at.Before(since) {
			return at.Sub(since)
		}
		t.Logf("a Down from before the cut: %s", strings.Join(f, " "))
	}
}

// drain drops the lines already read (the Downs of the chaos phase).
func (p *chaosPeer) drain() {
	for {
		select {
		case <-p.lines:
		default:
			return
		}
	}
}
