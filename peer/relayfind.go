package peer

import (
	"context"
	"sync/atomic"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/discovery"
)

// Finding relays: AutoRelay asks a relaySource for candidates when the
// node is private. It gets the static relays (WithRelays) first, then,
// with WithRelayDiscovery, the peers whose advertisement says they serve
// as relays (WithRelayService), with the addresses they advertise.
// Advertisements come from the mesh's peers only (signed, and admitted by
// the PSK and allowlist when set); a relay sees who talks to whom through
// it, never what (connections through it are encrypted end to end), and
// one that fails a reservation is left alone by AutoRelay for an hour.

// relayQueryEvery is the least time between two queries of AutoRelay for
// candidates: an advertisement that comes later is used that much later.
const relayQueryEvery = 10 * time.Second

// relayWatchEvery is how often a query of AutoRelay looks for relays
// advertised since it began.
const relayWatchEvery = 500 * time.Millisecond

// relayBackoff is how long a relay that refused a reservation is left alone.
const relayBackoff = time.Minute

// WithRelayDiscovery makes the node, when not publicly reachable, also
// reserve slots on relays its mesh's peers advertise (WithRelayService),
// besides those of WithRelays, and turns hole punching on (default off;
// the daemon's find_relays is on by default). It needs advertisements
// (WithGroups).
func WithRelayDiscovery(on bool) Option {
	return func(c *config) error { c.findRelays = on; return nil }
}

// relaySource gives AutoRelay its candidates.
type relaySource struct {
	static []libp2ppeer.AddrInfo
	find   bool
	dir    atomic.Pointer[discovery.Directory] // set once advertising starts
}

// candidates implements autorelay.PeerSource: at most num candidates,
// the static relays first, then the advertised relays known now and
// those advertised within relayQueryEvery (AutoRelay takes each as it
// comes, and asks again no sooner than that).
func (s *relaySource) candidates(ctx context.Context, num int) <-chan libp2ppeer.AddrInfo {
	c := make(chan libp2ppeer.AddrInfo)
	go func() {
		defer close(c)
		sent := map[libp2ppeer.ID]bool{}
		end := time.NewTimer(relayQueryEvery)
		defer end.Stop()
		for {
			var ads []*discovery.Advertisement
			if d := s.dir.Load(); s.find && d != nil {
				ads = d.Peers()
			}
			for _, ai := range relayCandidates(s.static, ads, num) {
				if sent[ai.ID] {
					continue
				}
				select {
				case c <- ai:
					sent[ai.ID] = true
				case <-ctx.Done():
					return
				}
			}
			if !s.find || len(sent) >= num {
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

// relayCandidates returns the static relays, then the advertised ones
// (each once, with the addresses its advertisement gives that are not
// themselves relayed), at most num.
func relayCandidates(static []libp2ppeer.AddrInfo, ads []*discovery.Advertisement, num int) []libp2ppeer.AddrInfo {
	out := make([]libp2ppeer.AddrInfo, 0, min(num, len(static)+len(ads)))
	seen := map[libp2ppeer.ID]bool{}
	add := func(ai libp2ppeer.AddrInfo) {
		if len(out) < num && !seen[ai.ID] && len(ai.Addrs) > 0 {
			seen[ai.ID] = true
			out = append(out, ai)
		}
	}
	for _, ai := range static {
		add(ai)
	}
	for _, ad := range ads {
		if !ad.Relay {
			continue
		}
		id, err := libp2ppeer.IDFromBytes(ad.Peer)
		if err != nil {
			continue
		}
		ai := libp2ppeer.AddrInfo{ID: id}
		for _, s := range ad.Addrs {
			a, err := ma.NewMultiaddr(s)
			if err != nil {
				continue
			}
			if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err == nil {
				continue // a relay reached through another relay
			}
			ai.Addrs = append(ai.Addrs, a)
		}
		add(ai)
	}
	return out
}

// autoRelayOptions configure AutoRelay (fed by s.candidates): a reservation as soon as
// one candidate is known (libp2p's default waits for four, or three
// minutes), candidates asked for every relayQueryEvery at most, and a
// relay that refused a reservation tried again after relayBackoff (a
// mesh has few relays; libp2p's default is an hour).
func (s *relaySource) autoRelayOptions() []autorelay.Option {
	return []autorelay.Option{
		autorelay.WithMinCandidates(1),
		autorelay.WithMinInterval(relayQueryEvery),
		autorelay.WithBackoff(relayBackoff),
	}
}
