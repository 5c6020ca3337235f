package peer

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/discovery"
)

// Finding relays: AutoRelay asks a relaySource for candidates when the
// node is private. With static relays (WithRelays) it gets those, and
// only those. Without, and with WithRelayDiscovery, it gets the relays
// found in the mesh: peers this node has a direct connection to whose
// signed advertisement says Relay and whose identify lists the relay
// protocol (their relay service runs, as they say), in random order, each
// with the address of that connection. So nothing is dialed for this, and
// a peer that advertises Relay without serving it is never tried. A relay sees who talks to whom through it, never
// what (connections through it are encrypted end to end), and may refuse
// or cut those circuits; one that refused a reservation is left alone for
// relayBackoff (docs/trust.md).

// relayQueryEvery is the least time between two queries of AutoRelay for
// candidates: a relay found later is offered that much later.
const relayQueryEvery = 10 * time.Second

// relayWatchEvery is how often a query looks for relays found since it
// began.
const relayWatchEvery = time.Second

// relayBackoff is how long a relay that refused a reservation is left alone.
const relayBackoff = time.Minute

// WithRelayDiscovery makes the node, when not publicly reachable and
// given no WithRelays, reserve slots on the relays of its mesh it is
// connected to (peers with WithRelayService that run it), and turns hole
// punching and AutoNAT v2 on (default off; the daemon's find_relays is
// on by default).
// It needs advertisements: WithGroups.
func WithRelayDiscovery(on bool) Option {
	return func(c *config) error { c.findRelays = on; return nil }
}

// relaySource gives AutoRelay its candidates.
type relaySource struct {
	static []libp2ppeer.AddrInfo
	find   bool
	h      atomic.Pointer[host.Host]           // set once the host exists
	dir    atomic.Pointer[discovery.Directory] // set once advertising starts
	dht    atomic.Pointer[discovery.DHT]       // set once the DHT starts; nil without one
	// fromDHT counts the candidates the DHT's relay key gave (relaydht.go).
	fromDHT atomic.Uint64
	lookups lookupBackoff // spaces the lookups of that key (relaydht.go)
}

// candidates implements autorelay.PeerSource: the static relays, or the
// relays found in the mesh now and within relayQueryEvery (AutoRelay
// takes each as it comes, and asks again no sooner than that), at most
// num; when the mesh has none connected, first those the DHT's relay key
// gives (relaydht.go), which AutoRelay dials.
func (s *relaySource) candidates(ctx context.Context, num int) <-chan libp2ppeer.AddrInfo {
	c := make(chan libp2ppeer.AddrInfo)
	go func() {
		defer close(c)
		sent := map[libp2ppeer.ID]bool{}
		dhtToo := len(s.static) == 0 && s.find // the DHT's relay key, while nothing else is found
		end := time.NewTimer(relayQueryEvery)
		defer end.Stop()
		for {
			var fresh []libp2ppeer.AddrInfo // found and not offered yet
			for _, ai := range s.found() {
				if !sent[ai.ID] {
					fresh = append(fresh, ai)
				}
			}
			if len(fresh) == 0 && len(sent) == 0 && dhtToo && s.dht.Load() != nil && s.lookups.start(time.Now()) {
				fresh = s.inDHT(ctx)
			}
			for _, ai := range relayCandidates(s.static, fresh, num-len(sent)) {
				select {
				case c <- ai:
					sent[ai.ID] = true
				case <-ctx.Done():
					return
				}
			}
			if len(s.static) > 0 || !s.find || len(sent) >= num {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-end.C:
				return
			case <-time.After(relayWatchEvery):
			}
		}
	}()
	return c
}

// found returns the relays found in the mesh: peers with a direct
// connection that advertise Relay and whose identify lists the relay hop
// protocol, each with the address of that connection only (so AutoRelay
// dials nothing: a peer reached through a relay, whose own addresses
// would have to be dialed, is no candidate).
func (s *relaySource) found() []libp2ppeer.AddrInfo {
	hp, d := s.h.Load(), s.dir.Load()
	if !s.find || hp == nil || d == nil {
		return nil
	}
	h := *hp
	var out []libp2ppeer.AddrInfo
	for _, id := range h.Network().Peers() {
		if ad := d.Ad(id); ad == nil || !ad.Relay {
			continue
		}
		if ok, _ := h.Peerstore().SupportsProtocols(id, proto.ProtoIDv2Hop); len(ok) == 0 {
			continue
		}
		for _, c := range h.Network().ConnsToPeer(id) {
			if !c.Stat().Limited && !isCircuit(c.RemoteMultiaddr()) {
				out = append(out, libp2ppeer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{c.RemoteMultiaddr()}})
				break
			}
		}
	}
	return out
}

// isCircuit reports whether a is a relayed (p2p-circuit) address.
func isCircuit(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// relayCandidates returns every static relay if there are any, else the
// found ones in random order, at most num.
func relayCandidates(static, found []libp2ppeer.AddrInfo, num int) []libp2ppeer.AddrInfo {
	if len(static) > 0 {
		return static
	}
	out := append([]libp2ppeer.AddrInfo(nil), found...)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:max(0, min(num, len(out)))]
}

// autoRelayOptions configure AutoRelay (fed by s.candidates): with
// static relays, a reservation on each, as libp2p's own static option
// does; else one as soon as a relay is found (libp2p's default waits for
// four, or three minutes). Candidates are asked for every
// relayQueryEvery at most, and a relay that refused a reservation is
// tried again after relayBackoff (a mesh has few relays; libp2p's
// default is an hour).
func (s *relaySource) autoRelayOptions() []autorelay.Option {
	o := []autorelay.Option{autorelay.WithMinInterval(relayQueryEvery), autorelay.WithBackoff(relayBackoff)}
	if n := len(s.static); n > 0 {
		return append(o, autorelay.WithMaxCandidates(n), autorelay.WithMinCandidates(n), autorelay.WithNumRelays(n))
	}
	return append(o, autorelay.WithMinCandidates(1))
}
