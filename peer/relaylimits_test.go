package peer

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// newKey returns a fresh identity and its peer ID.
func newKey(t *testing.T) (crypto.PrivKey, libp2ppeer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := libp2ppeer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, id
}

// spawnEcho spawns an actor "echo" on n that answers each message with it.
func spawnEcho(t *testing.T, n *Node) actor.Ref {
	t.Helper()
	if _, err := n.System().Spawn("echo", func(c *actor.Context) {
		c.Receive(actor.Loop(actor.Any(func(m any) { c.Reply(m) })))
	}); err != nil {
		t.Fatal(err)
	}
	ref, _ := Ref(n.ID(), "echo")
	return ref
}

// relayLimitOf returns the limit the caller's connection to id was told
// (duration, data), and whether it is limited (relayed) at all.
func relayLimitOf(caller *Node, id libp2ppeer.ID) (d time.Duration, data uint64, limited bool) {
	for _, c := range caller.Host().Network().ConnsToPeer(id) {
		st := c.Stat()
		if st.Limited {
			d, _ = st.Extra[client.StatLimitDuration].(time.Duration)
			data, _ = st.Extra[client.StatLimitData].(uint64)
			return d, data, true
		}
	}
	return 0, 0, false
}

// TestRelayMembersAreNotCut: a relay whose stranger limit is 2 s and
// 16 KiB relays a circuit between two members of its mesh (named by
// WithRelayMembers) with no limit: the caller asks the hidden node for
// twice as long and four times as much data, every ask answered with
// its own payload in turn, no loss declared on either side, and the
// connection is still relayed (Limited, told no bounds) at the end.
func TestRelayMembersAreNotCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hk, hid := newKey(t)
	ck, cid := newKey(t)
	const dur, data = 2 * time.Second, 16 << 10
	relay, hidden, caller := relayedTrioAs(t, ctx, []Option{WithIdentity(hk)}, []Option{WithIdentity(ck)},
		WithRelayStrangerLimit(dur, data), WithRelayMembers(hid, cid))
	echo := spawnEcho(t, hidden)
	pad := strings.Repeat("x", 1024)
	start, sent := time.Now(), 0
	for i := 0; time.Since(start) < 2*dur || sent < 4*data; i++ {
		msg := fmt.Sprintf("%d %s", i, pad)
		reply, err := actor.AskAs[string](ctx, caller.System(), echo, msg)
		if err != nil || reply != msg {
			t.Fatalf("ask %d after %v, %d bytes: %.20q, %v", i, time.Since(start), sent, reply, err)
		}
		sent += len(msg)
		time.Sleep(20 * time.Millisecond) // a pace (50 asks/s), so that the time limit is what would cut first
	}
	if d, n, limited := relayLimitOf(caller, hid); !limited || d != 0 || n != 0 {
		t.Fatalf("caller's connection: limited %v, told %v and %d bytes; want relayed with no bounds", limited, d, n)
	}
	for _, n := range []*Node{caller, hidden} {
		if st := n.Stats(); st.PeersDown != 0 || st.LossesDeclared != 0 || st.LossesHeard != 0 {
			t.Fatalf("a loss on a member circuit: %+v", st)
		}
	}
	st := relay.RelayStats()
	if st.MemberCircuits == 0 || st.Cut != 0 || st.Circuits < 1 || st.Reservations < 1 {
		t.Fatalf("relay stats %+v: want a member circuit open, a reservation, no cut", st)
	}
	t.Logf("%d bytes asked over %v through a member circuit; relay %+v", sent, time.Since(start).Round(time.Millisecond), st)
}

// TestRelayStrangerIsCutInTime: the same relay cuts a circuit with a
// stranger (the caller is no member) at its time limit, and says so: the
// caller is told the limit, asks work before it, and the cut is declared
// (the caller's monitor of the hidden node's actor gets ErrNodeDown)
// within about the limit.
func TestRelayStrangerIsCutInTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hk, hid := newKey(t)
	const dur = 2 * time.Second
	relay, hidden, caller := relayedTrioAs(t, ctx, []Option{WithIdentity(hk)}, nil,
		WithRelayStrangerLimit(dur, 1<<20), WithRelayMembers(hid))
	echo := spawnEcho(t, hidden)
	connected := time.Now()
	if d, n, limited := relayLimitOf(caller, hid); !limited || d != dur || n != 1<<20 {
		t.Fatalf("caller's connection: limited %v, told %v and %d bytes; want the stranger limit", limited, d, n)
	}
	if reply, err := actor.AskAs[string](ctx, caller.System(), echo, "before"); err != nil || reply != "before" {
		t.Fatalf("ask before the limit: %q, %v", reply, err)
	}
	down := make(chan actor.Down, 1)
	if _, err := caller.System().Spawn("watcher", func(c *actor.Context) {
		c.Monitor(echo)
		c.Receive(actor.On(func(d actor.Down) { down <- d }))
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-down:
		took := time.Since(connected)
		if !errors.Is(d.Reason, actor.ErrNodeDown) {
			t.Fatalf("Down %+v; want ErrNodeDown", d)
		}
		if took < dur-500*time.Millisecond || took > dur+5*time.Second {
			t.Fatalf("cut after %v; want about %v", took, dur)
		}
		t.Logf("stranger circuit cut %v after connecting (limit %v)", took.Round(time.Millisecond), dur)
	case <-ctx.Done():
		t.Fatal("no Down: the stranger's circuit outlived its limit")
	}
	cutCounted(t, relay) // the cut is counted when the relay's copy sees its deadline
	if st := relay.RelayStats(); st.MemberCircuits != 0 {
		t.Fatalf("relay stats %+v: a stranger's circuit counted as a member's", st)
	}
}

// TestRelayStrangerIsCutAtItsData: a stranger's circuit with a long
// time limit and 64 KiB each way is cut at its data cap: asks of 1 KiB
// work at first and one fails before twice the cap has been asked (the
// circuit also carries the security and identify handshakes), and the
// relay counts the cut.
func TestRelayStrangerIsCutAtItsData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hk, hid := newKey(t)
	const data = 64 << 10
	relay, hidden, caller := relayedTrioAs(t, ctx, []Option{WithIdentity(hk)}, nil,
		WithRelayStrangerLimit(time.Hour, data), WithRelayMembers(hid))
	echo := spawnEcho(t, hidden)
	pad := strings.Repeat("x", 1024)
	sent, answered := 0, 0
	for ; sent < 2*data; sent += len(pad) {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		reply, err := actor.AskAs[string](actx, caller.System(), echo, pad)
		acancel()
		if err != nil {
			break
		}
		if reply != pad {
			t.Fatalf("ask %d: a wrong reply", answered)
		}
		answered++
	}
	if answered == 0 || sent >= 2*data {
		t.Fatalf("%d asks answered, %d bytes asked: want some answered, then a cut before %d bytes", answered, sent, 2*data)
	}
	cutCounted(t, relay) // the count follows the relay's copy ending
	t.Logf("cut after %d asks (%d bytes asked); relay %+v", answered, sent, relay.RelayStats())
}

// cutCounted waits for relay to count a circuit it cut: no event tells of
// the count.
func cutCounted(t *testing.T, relay *Node) {
	t.Helper()
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		if st := relay.RelayStats(); st.Cut == 0 {
			return fmt.Errorf("relay stats %+v: the cut is not counted", st)
		}
		return nil
	})
}

// TestRelayMetrics: a relay with WithPrometheus exports its counts as
// troupe_relay_*, and libp2p's own relay metrics as before; with a
// private network, the caller's circuit is a member's.
func TestRelayMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	// One private network for the three: every peer is a member.
	psk := []Option{WithPrivateNetwork(bytes.Repeat([]byte{7}, 32))}
	relayedTrioAs(t, ctx, psk, psk, append(psk, WithPrometheus(reg))...)
	values := gather(t, reg)
	for name, want := range map[string]float64{
		"troupe_relay_reservations": 1, "troupe_relay_circuits": 1, "troupe_relay_member_circuits_total": 1,
		"troupe_relay_cuts_total": 0, "libp2p_relaysvc_status": 1,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (exported %v); want %v", name, got, ok, want)
		}
	}
}
