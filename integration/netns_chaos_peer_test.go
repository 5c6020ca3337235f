//go:build linux

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

// The two sides of TestChaos run as this test binary in their namespaces
// (TestChaosPeer, with TROUPE_CHAOS_ROLE set), each a node driven by
// commands on stdin that answers with "chaos ..." lines on stdout.
//
// Side b hosts "echo", which answers Ping{N} with Pong{N}, and "seq",
// which takes Batch{Seq}. A number n ≥ 0 is lane n/chaosLane's
// (n%chaosLane)th: each lane is one goroutine of side a, so its numbers
// must arrive in increasing order. Both b's actors count a number at or
// below its lane's last as a reorder (or duplicate); seq counts a number
// past its lane's next as missing, covered when a Down for a's node
// arrived since the lane's last number (the loss protocol's promise:
// a message is lost only with a Down, before anything sent after it),
// silent otherwise. seq monitors a's "anchor" to get those Downs, and
// a's anchor monitors b's seq, each printing "chaos down <unix ns>".
const chaosLane = 1_000_000

// chaosPort is the TCP port both sides listen on.
const chaosPort = 4001

type chaosWatch struct{} // local: (re)monitor the other side
type chaosState struct{} // local: report your counts

// chaosEchoState is what b's echo counted.
type chaosEchoState struct {
	Asks, Reorders int
}

// chaosResult is what side a's run reports.
type chaosResult struct {
	Asks, Replies, NodeDown, Unreachable, Timeouts, Wrong, Sends, SendErrs int
	OtherErrs                                                              []string `json:",omitempty"`
	Lanes, PerLane                                                         int
	Seconds                                                                float64
	DeadLetters, LossesDeclared, LossesHeard, PeersDown                    uint64
	DeadLetterKinds                                                        map[string]uint64
}

// TestChaosPeer is a side of TestChaos; it does nothing unless started
// by it.
func TestChaosPeer(t *testing.T) {
	role := os.Getenv("TROUPE_CHAOS_ROLE")
	if role == "" {
		t.Skip("a side of TestChaos, started by it")
	}
	liveness, err := time.ParseDuration(os.Getenv("TROUPE_CHAOS_LIVENESS"))
	if err != nil {
		t.Fatal(err)
	}
	side := 0
	if role == "b" {
		side = 1
	}
	n := newNode(t, peer.WithListenAddrs(fmt.Sprintf("/ip4/%s/tcp/%d", chaosAddr(side), chaosPort)),
		peer.WithLiveness(liveness), peer.WithLogger(testutil.QuietLogger()))
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf("chaos "+format+"\n", args...)
	}
	in := bufio.NewScanner(os.Stdin)
	if role == "b" {
		chaosB(t, n, in, say)
	} else {
		chaosA(t, n, in, say)
	}
}

func chaosB(t *testing.T, n *peer.Node, in *bufio.Scanner, say func(string, ...any)) {
	var echoState chaosEchoState
	echoLast := map[int]int{}
	spawn(t, n, "echo", func(c *actor.Context) {
		c.Receive(actor.Loop(
			actor.On(func(p Ping) {
				if p.N >= 0 {
					echoState.Asks++
					lane, i := p.N/chaosLane, p.N%chaosLane
					if last, ok := echoLast[lane]; ok && i <= last {
						echoState.Reorders++
						say("reorder ask %d after %d", p.N, lane*chaosLane+last)
					}
					echoLast[lane] = i
				}
				c.Reply(Pong(p))
			}),
			actor.On(func(chaosState) { c.Reply(echoState) }),
		))
	})
	say("hello %s", n.ID())
	if !in.Scan() { // "anchor <a's peer ID>"
		t.Fatal("no anchor line")
	}
	anchor, err := actor.NewRef(strings.TrimPrefix(in.Text(), "anchor "), "anchor")
	if err != nil {
		t.Fatal(err)
	}
	st := newChaosSeqState()
	spawn(t, n, "seq", func(c *actor.Context) {
		monitored := false
		var h actor.Case
		watch := func() {
			if !monitored {
				c.Monitor(anchor)
				monitored = true
			}
		}
		h = actor.Loop(
			actor.On(func(b Batch) {
				watch() // a number arrived: the link is back
				if wrong := st.arrive(b.Seq); wrong != "" {
					say("%s", wrong)
				}
			}),
			actor.On(func(d actor.Down) {
				monitored = false
				st.down()
				say("down %d %v", time.Now().UnixNano(), d.Reason)
			}),
			actor.On(func(Ping) { c.Reply(Ack{Upto: st.Received}) }), // a's last word
			actor.On(func(chaosWatch) { watch(); c.Reply(true) }),
			actor.On(func(chaosState) { // a copy: the maps stay the actor's
				cp := st
				cp.Last, cp.DownSince = maps.Clone(st.Last), maps.Clone(st.DownSince)
				c.Reply(cp)
			}),
		)
		c.Receive(h)
	})
	seq, _ := n.System().Whereis("seq")
	echoRef, _ := n.System().Whereis("echo")
	for in.Scan() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		switch in.Text() {
		case "watch":
			if _, err := n.System().Ask(ctx, seq, chaosWatch{}); err != nil {
				t.Fatal(err)
			}
			say("watching")
		case "report":
			s, err1 := n.System().Ask(ctx, seq, chaosState{})
			e, err2 := n.System().Ask(ctx, echoRef, chaosState{})
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(struct {
				Seq         chaosSeqState
				Echo        chaosEchoState
				DeadLetters uint64
			}{s.(chaosSeqState), e.(chaosEchoState), n.System().DeadLetters()})
			say("report %s", js)
		}
		cancel()
	}
}

func chaosA(t *testing.T, n *peer.Node, in *bufio.Scanner, say func(string, ...any)) {
	addr, err := ma.NewMultiaddr(os.Getenv("TROUPE_CHAOS_PEER"))
	if err != nil {
		t.Fatal(err)
	}
	ai, err := libp2ppeer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	echoRef, _ := actor.NewRef(ai.ID.String(), "echo")
	seq, _ := actor.NewRef(ai.ID.String(), "seq")
	anchor := spawn(t, n, "anchor", func(c *actor.Context) {
		monitored := false
		c.Receive(actor.Loop(
			actor.On(func(chaosWatch) {
				if !monitored {
					c.Monitor(seq)
					monitored = true
				}
				c.Reply(true)
			}),
			actor.On(func(d actor.Down) {
				monitored = false
				say("down %d %v", time.Now().UnixNano(), d.Reason)
			}),
		))
	})
	n.Host().Network().Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		if c.RemotePeer() == ai.ID {
			say("connected %d", time.Now().UnixNano())
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Connect(ctx, *ai); err != nil {
		t.Fatal(err)
	}
	say("hello %s", n.ID())
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch f[0] {
		case "watch":
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := n.System().Ask(ctx, anchor, chaosWatch{}); err != nil {
				t.Fatal(err)
			}
			cancel()
			say("watching")
		case "run": // run <asks> <lanes> <ask timeout>
			asks, _ := strconv.Atoi(f[1])
			lanes, _ := strconv.Atoi(f[2])
			timeout, _ := time.ParseDuration(f[3])
			r := chaosRun(n, echoRef, seq, asks, lanes, timeout)
			js, _ := json.Marshal(r)
			say("result %s", js)
		case "heal": // ask b's echo until it answers
			chaosHeal(n, echoRef, say)
		}
	}
}

// chaosRun asks b's echo asks times over lanes goroutines, each asking
// and then sending its number to b's seq, and ends with an ask of seq
// (its reply comes after everything sent before it on the link).
func chaosRun(n *peer.Node, echoRef, seq actor.Ref, asks, lanes int, timeout time.Duration) chaosResult {
	r := chaosResult{Lanes: lanes, PerLane: asks / lanes}
	var replies, nodeDown, unreachable, timeouts, wrong, sends, sendErrs atomic.Int64
	var mu sync.Mutex // guards r.OtherErrs
	start := time.Now()
	var wg sync.WaitGroup
	for lane := range lanes {
		wg.Go(func() {
			for i := range r.PerLane {
				num := lane*chaosLane + i
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				rep, err := n.System().Ask(ctx, echoRef, Ping{N: num})
				switch {
				case err == nil && rep == Pong{N: num}:
					replies.Add(1)
				case err == nil:
					wrong.Add(1)
				case errors.Is(err, actor.ErrNodeDown):
					nodeDown.Add(1)
				case errors.Is(err, routing.ErrUnreachable): // not sent: no connection, none dialed
					unreachable.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					timeouts.Add(1)
				default:
					mu.Lock()
					if len(r.OtherErrs) < 10 {
						r.OtherErrs = append(r.OtherErrs, err.Error())
					}
					mu.Unlock()
				}
				cancel()
				sends.Add(1)
				ctx, cancel = context.WithTimeout(context.Background(), timeout)
				if err := n.SendCtx(ctx, seq, Batch{Seq: num}); err != nil {
					sendErrs.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	for range 10 { // the last word: tried again while the link is down
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := n.System().Ask(ctx, seq, Ping{N: -1})
		cancel()
		if err == nil {
			break
		}
	}
	r.Asks = lanes * r.PerLane
	r.Replies, r.NodeDown, r.Unreachable = int(replies.Load()), int(nodeDown.Load()), int(unreachable.Load())
	r.Timeouts, r.Wrong = int(timeouts.Load()), int(wrong.Load())
	r.Sends, r.SendErrs = int(sends.Load()), int(sendErrs.Load())
	st := n.Stats()
	r.DeadLetterKinds = n.System().DeadLettersByKind()
	r.DeadLetters, r.LossesDeclared, r.LossesHeard, r.PeersDown = n.System().DeadLetters(), st.LossesDeclared, st.LossesHeard, st.PeersDown
	return r
}

// chaosHeal asks echo every 100 ms, each ask given 3 s (a round trip
// over the bad link is 0.2–0.3 s, more with a loss), until one is
// answered or 30 s pass, and says when the first answer came.
func chaosHeal(n *peer.Node, echoRef actor.Ref, say func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answered := make(chan time.Time, 1)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := n.System().Ask(ctx, echoRef, Ping{N: -2}); err == nil {
				select {
				case answered <- time.Now():
				default:
				}
			}
		})
		select {
		case at := <-answered:
			say("healed %d", at.UnixNano())
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
