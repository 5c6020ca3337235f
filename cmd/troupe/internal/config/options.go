package config

import (
	"os"
	"path/filepath"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/troupe-mesh/troupe/peer"
)

// PeerOptions turns a validated configuration into node options.
func (c *Config) PeerOptions(home string) ([]peer.Option, error) {
	opts := []peer.Option{
		peer.WithListenAddrs(c.Listen...),
		peer.WithMesh(c.Mesh),
		peer.WithMDNS(c.MDNS),
		peer.WithGroups(true),
		peer.WithNATPortMap(c.NATPortMap),
		peer.WithRelayService(c.RelayService),
		peer.WithRelayDiscovery(c.FindRelays),
	}
	for _, r := range c.Relays {
		ai, _ := ParsePeerAddr(r)
		opts = append(opts, peer.WithRelays(ai))
	}
	if l, _ := c.Limits.peerLimits(); l != (peer.Limits{}) {
		opts = append(opts, peer.WithLimits(l))
	}
	opts = append(opts, peer.WithConnections(c.Connections.budget()))
	if c.Liveness != "" {
		d, _ := time.ParseDuration(c.Liveness)
		opts = append(opts, peer.WithLiveness(d))
	}
	var boots []libp2ppeer.AddrInfo
	for _, b := range c.Bootstrap {
		ai, _ := ParsePeerAddr(b)
		boots = append(boots, ai)
	}
	if c.DHT == "server" || (c.DHT == "client" && len(boots) > 0) {
		opts = append(opts, peer.WithDHT(boots...), peer.WithDHTClient(c.DHT == "client"))
	}
	for _, s := range c.RelayMembers {
		id, _ := libp2ppeer.Decode(s) // validated
		opts = append(opts, peer.WithRelayMembers(id))
	}
	if len(c.Allowlist) > 0 {
		ids := make([]libp2ppeer.ID, 0, len(c.Allowlist))
		for _, s := range c.Allowlist {
			id, _ := libp2ppeer.Decode(s)
			ids = append(ids, id)
		}
		opts = append(opts, peer.WithAllowlist(ids...))
	}
	if c.PSKFile != "" {
		path := c.PSKFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(home, path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, configError("psk_file", "%v", err)
		}
		defer f.Close()
		psk, err := pnet.DecodeV1PSK(f)
		if err != nil {
			return nil, configError("psk_file", "%s: %v", path, err)
		}
		opts = append(opts, peer.WithPrivateNetwork(psk))
	}
	return opts, nil
}
