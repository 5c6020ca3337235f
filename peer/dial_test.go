package peer

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

func TestTCPFirst(t *testing.T) {
	m := func(ss ...string) []ma.Multiaddr {
		var out []ma.Multiaddr
		for _, s := range ss {
			out = append(out, ma.StringCast(s))
		}
		return out
	}
	delays := func(r []network.AddrDelay) map[string]time.Duration {
		out := map[string]time.Duration{}
		for _, a := range r {
			out[a.Addr.String()] = a.Delay
		}
		return out
	}
	const (
		lanTCP   = "/ip4/192.168.1.2/tcp/4001"
		lanQUIC  = "/ip4/192.168.1.2/udp/4001/quic-v1"
		lanTCP6  = "/ip6/fd00::2/tcp/4001"
		pubTCP   = "/ip4/203.0.113.7/tcp/4001"
		pubQUIC  = "/ip4/203.0.113.7/udp/4001/quic-v1"
		relayTCP = "/ip4/203.0.113.9/tcp/4001/p2p/12D3KooWGRUVh1BqbAFvcnTZ9nAHpQrVEPXrzc2jSSmL9Zk8M2rL/p2p-circuit"
	)
	t.Run("TCP first, QUIC after it", func(t *testing.T) {
		d := delays(tcpFirst(m(lanQUIC, lanTCP, pubQUIC, pubTCP)))
		if d[lanTCP] != 0 {
			t.Errorf("LAN TCP waits %v", d[lanTCP])
		}
		for _, q := range []string{lanQUIC, pubQUIC} {
			for _, tc := range []string{lanTCP, pubTCP} {
				if d[q] < d[tc]+quicAfter {
					t.Errorf("%s at %v, before %s at %v + %v", q, d[q], tc, d[tc], quicAfter)
				}
			}
		}
	})
	t.Run("TCP addresses keep their spacing", func(t *testing.T) {
		d := delays(tcpFirst(m(lanQUIC, lanTCP, lanTCP6)))
		if min(d[lanTCP], d[lanTCP6]) != 0 || d[lanTCP] == d[lanTCP6] {
			t.Errorf("TCP delays %v and %v", d[lanTCP], d[lanTCP6])
		}
	})
	t.Run("one transport: libp2p's ranking", func(t *testing.T) {
		for _, addrs := range [][]string{{lanQUIC}, {lanTCP}, {lanQUIC, pubQUIC}} {
			got, want := delays(tcpFirst(m(addrs...))), delays(swarm.DefaultDialRanker(m(addrs...)))
			for a, w := range want {
				if got[a] != w {
					t.Errorf("%v: %s at %v, libp2p says %v", addrs, a, got[a], w)
				}
			}
		}
	})
	t.Run("relays are not direct TCP", func(t *testing.T) {
		if transportOf(ma.StringCast(relayTCP)) != 0 {
			t.Error("a relayed address counted as TCP")
		}
		d := delays(tcpFirst(m(relayTCP, lanQUIC, lanTCP)))
		if len(d) != 3 || d[lanTCP] != 0 {
			t.Errorf("delays %v", d)
		}
	})
}
