package peer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	ma "github.com/multiformats/go-multiaddr"
)

func addrs(t *testing.T, ss ...string) []ma.Multiaddr {
	t.Helper()
	out := make([]ma.Multiaddr, len(ss))
	for i, s := range ss {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = a
	}
	return out
}

const relayCircuit = "/ip4/11.0.0.1/tcp/4001/p2p/12D3KooWAgL6272XnviXpJhG6AmjweQDJDRVe5NJ1qRZwFkDPpHU/p2p-circuit"

// A peer that advertises a relay address is not dialed directly before a
// punch: its global IPv6 address, which its firewall drops, cost every
// first round 5 s. A peer without one keeps all its addresses (libp2p's
// connection reversal: a public peer is dialed directly).
func TestDialBeforePunch(t *testing.T) {
	private := addrs(t, "/ip6/2a00:1:1::2/tcp/4001", "/ip6/2a00:1:1::2/udp/4001/quic-v1", relayCircuit)
	got := dialBeforePunch(private)
	if len(got) != 1 || got[0].String() != relayCircuit {
		t.Fatalf("a peer with a relay address: %v, want only the relay address", got)
	}
	if len(private) != 3 {
		t.Fatalf("dialBeforePunch changed its argument: %v", private)
	}
	public := addrs(t, "/ip4/11.0.0.5/tcp/4001", "/ip4/11.0.0.5/udp/4001/quic-v1")
	if got := dialBeforePunch(public); !slices.EqualFunc(got, public, ma.Multiaddr.Equal) {
		t.Fatalf("a public peer: %v, want %v", got, public)
	}
}

// The addresses offered for a punch are public and direct, once each.
func TestPunchAddrs(t *testing.T) {
	got := punchAddrs(addrs(t, "/ip4/10.1.0.2/tcp/4001", "/ip4/127.0.0.1/tcp/4001", "/ip4/11.0.0.101/tcp/4001",
		relayCircuit, "/ip4/11.0.0.101/tcp/4001", "/ip6/2a00:1:1::2/udp/4001/quic-v1"))
	want := addrs(t, "/ip4/11.0.0.101/tcp/4001", "/ip6/2a00:1:1::2/udp/4001/quic-v1")
	if !slices.EqualFunc(got, want, ma.Multiaddr.Equal) {
		t.Fatalf("punchAddrs = %v, want %v", got, want)
	}
}

// Observed addresses: the newest last, each once, at most max.
func TestObserveKeepsTheNewest(t *testing.T) {
	in := addrs(t, "/ip4/11.0.0.1/tcp/1", "/ip4/11.0.0.1/tcp/2", "/ip4/11.0.0.1/tcp/3", "/ip4/11.0.0.1/tcp/1")
	var list []ma.Multiaddr
	for _, a := range in {
		list = observe(list, a, 2)
	}
	want := addrs(t, "/ip4/11.0.0.1/tcp/3", "/ip4/11.0.0.1/tcp/1")
	if !slices.EqualFunc(list, want, ma.Multiaddr.Equal) {
		t.Fatalf("observed %v, want %v", list, want)
	}
}

// Retries are bounded, and wait longer each time.
func TestPunchRetriesAreBounded(t *testing.T) {
	if n := len(punchRetryDelays); n == 0 || n > 6 {
		t.Fatalf("%d retries per relayed connection", n)
	}
	var total time.Duration
	for i, d := range punchRetryDelays {
		if i > 0 && d <= punchRetryDelays[i-1] {
			t.Fatalf("retry %d waits %v, not longer than the one before (%v)", i, d, punchRetryDelays[i-1])
		}
		total += d
	}
	if total > 10*time.Minute {
		t.Fatalf("retries span %v", total)
	}
}

// Peers retried at once are bounded (hostile peers can come in through
// relays under any number of identities); a peer is retried once at a
// time, and none after close.
func TestPunchTrackIsBounded(t *testing.T) {
	p := &puncher{retrying: make(map[libp2ppeer.ID]chan struct{})}
	for i := range punchRetryMax {
		if _, ok := p.track(libp2ppeer.ID(fmt.Sprint("peer", i))); !ok {
			t.Fatalf("peer %d not retried", i)
		}
	}
	if _, ok := p.track("one more"); ok {
		t.Fatalf("%d peers retried, want at most %d", len(p.retrying), punchRetryMax)
	}
	delete(p.retrying, "peer0")
	p.wg.Done()
	if _, ok := p.track("peer1"); ok {
		t.Fatal("a peer retried twice at once")
	}
	p.closed = true
	if _, ok := p.track("peer0"); ok {
		t.Fatal("a peer retried after close")
	}
	for range p.retrying {
		p.wg.Done()
	}
	p.wg.Wait()
}

// An address change of our own kicks every retry waiting (the retry then
// tries a round at once); a public observed address is kept, a private
// one is not.
func TestPunchEventsKickRetries(t *testing.T) {
	bus := eventbus.NewBus()
	sub, err := bus.Subscribe([]any{new(event.EvtPeerIdentificationCompleted), new(event.EvtLocalAddressesUpdated)})
	if err != nil {
		t.Fatal(err)
	}
	p := &puncher{retrying: make(map[libp2ppeer.ID]chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	kick, _ := p.track("a")
	p.wg.Go(func() { p.events(sub) })
	ident, _ := bus.Emitter(new(event.EvtPeerIdentificationCompleted))
	local, _ := bus.Emitter(new(event.EvtLocalAddressesUpdated))
	for _, a := range addrs(t, "/ip4/10.1.0.2/tcp/4001", "/ip4/11.0.0.101/tcp/4001") {
		if err := ident.Emit(event.EvtPeerIdentificationCompleted{ObservedAddr: a}); err != nil {
			t.Fatal(err)
		}
	}
	if err := local.Emit(event.EvtLocalAddressesUpdated{Diffs: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kick:
	case <-time.After(5 * time.Second):
		t.Fatal("an address change did not kick the retry")
	}
	// Events are handled in order: the observed addresses came first.
	p.mu.Lock()
	obs := slices.Clone(p.observed)
	p.mu.Unlock()
	if want := addrs(t, "/ip4/11.0.0.101/tcp/4001"); !slices.EqualFunc(obs, want, ma.Multiaddr.Equal) {
		t.Fatalf("observed %v, want %v", obs, want)
	}
	p.cancel()
	delete(p.retrying, "a")
	p.wg.Done()
	p.wg.Wait()
}

// A change of the interface addresses kicks every retry waiting within a
// poll (libp2p's own event comes up to a minute later), a change soon
// after a retry began included; no change, or a change while no retry
// waited, kicks nothing, and nothing looks at the interfaces while no
// retry waits.
func TestPunchInterfaceChangeKicksRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := eventbus.NewBus()
		sub, err := bus.Subscribe([]any{new(event.EvtPeerIdentificationCompleted), new(event.EvtLocalAddressesUpdated)})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		ifaces, looks := "/ip4/10.1.0.2/tcp/4001", 0
		setIfaces := func(s string) { mu.Lock(); ifaces = s; mu.Unlock() }
		looked := func() int { mu.Lock(); defer mu.Unlock(); return looks }
		p := &puncher{retrying: make(map[libp2ppeer.ID]chan struct{}), began: make(chan struct{}, 1),
			ifaces: func() string { mu.Lock(); defer mu.Unlock(); looks++; return ifaces }}
		p.ctx, p.cancel = context.WithCancel(context.Background())
		p.wg.Go(func() { p.events(sub) })
		defer func() { // also after a failure: the bubble's goroutines end
			p.cancel()
			p.mu.Lock()
			tracked := len(p.retrying)
			clear(p.retrying)
			p.mu.Unlock()
			for range tracked {
				p.wg.Done() // what track added for each
			}
			p.wg.Wait()
			_ = sub.Close()
		}()
		kicked := func(kick <-chan struct{}) bool {
			select {
			case <-kick:
				return true
			default:
				return false
			}
		}
		time.Sleep(5 * punchIfacePoll)
		synctest.Wait()
		if n := looked(); n != 0 {
			t.Fatalf("looked at the interfaces %d times before any retry began", n)
		}
		a, _ := p.track("a")
		time.Sleep(3 * punchIfacePoll)
		synctest.Wait()
		if kicked(a) {
			t.Fatal("kicked with the interface addresses unchanged")
		}
		if looked() == 0 {
			t.Fatal("no look at the interfaces while a retry waited")
		}
		// A change while nobody waits is no change to a retry that
		// starts later; nothing looks meanwhile.
		p.mu.Lock()
		delete(p.retrying, "a")
		p.mu.Unlock()
		p.wg.Done()
		time.Sleep(2 * punchIfacePoll) // a poll finds no retry waiting
		synctest.Wait()
		idle := looked()
		setIfaces("/ip4/10.1.0.2/tcp/4001 /ip4/10.1.0.3/tcp/4001")
		time.Sleep(5 * punchIfacePoll)
		synctest.Wait()
		if n := looked(); n != idle {
			t.Fatalf("looked at the interfaces %d times while no retry waited", n-idle)
		}
		kick, _ := p.track("b")
		time.Sleep(punchIfacePoll / 2)
		synctest.Wait()
		if kicked(kick) {
			t.Fatal("kicked for a change made before the retry began")
		}
		setIfaces("/ip4/10.1.0.3/tcp/4001")
		time.Sleep(punchIfacePoll)
		synctest.Wait()
		if !kicked(kick) {
			t.Fatalf("an interface address change half a poll after the retry began did not kick it within %v", punchIfacePoll)
		}
		time.Sleep(3 * punchIfacePoll)
		synctest.Wait()
		if kicked(kick) {
			t.Fatal("kicked again with the interface addresses unchanged")
		}
	})
}
