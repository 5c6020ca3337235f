package discovery

import (
	"context"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// Relays in the DHT: a peer whose relay service runs provides itself
// under the mesh's relay key, so that a private peer with no relay it is
// connected to (a large mesh, whose dial budget leaves most peers
// unconnected) finds one by a lookup, as a name (names.go). A record
// says only "this peer claims to relay": the finder's AutoRelay connects
// and reserves, and a peer that does not relay refuses (and is left
// alone for a while).

const (
	// relayRepublish is how often a relay provides its record again (the
	// DHT keeps a provider record for hours; a relay that stopped is
	// left out by the finder when its reservation fails).
	relayRepublish = 30 * time.Minute
	// relayRetry is the least wait before providing again after a
	// failure (no routing table yet, say), doubling up to relayTick.
	relayRetry = 500 * time.Millisecond
	// relayTick is how often a peer that does not relay (now) looks
	// again whether it does.
	relayTick = 5 * time.Second
	// MaxRelayProviders is the most relays a lookup returns.
	MaxRelayProviders = 8
)

// RelayKey is the DHT key under which the peers of mesh that serve as
// relays provide themselves: a raw CID of the SHA-256 of
// "/troupe/<mesh>/relays".
func RelayKey(mesh string) (cid.Cid, error) {
	h, err := mh.Sum([]byte("/troupe/"+mesh+"/relays"), mh.SHA2_256, -1)
	if err != nil {
		return cid.Undef, err
	}
	return cid.NewCidV1(cid.Raw, h), nil
}

// WithRelayProvider makes the DHT provide this peer under the mesh's
// relay key while relays reports true (its relay service runs).
func WithRelayProvider(relays func() bool) Option {
	return func(c *config) error { c.relays = relays; return nil }
}

// provideRelay keeps this peer's record under the relay key fresh while
// dhtConfig.Relays says it relays.
func (d *DHT) provideRelay() {
	defer d.wg.Done()
	if d.cfg.Relays == nil {
		return
	}
	key, err := RelayKey(d.cfg.Mesh)
	if err != nil {
		return
	}
	wait := relayRetry
	for d.sleep(wait) {
		if !d.cfg.Relays() {
			wait = relayTick
			continue
		}
		ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
		err := d.kad.Provide(ctx, key, true)
		cancel()
		if err != nil {
			d.cfg.Logger.Debug("discovery: providing the relay key", "err", err)
			wait = min(2*wait, relayTick)
			continue
		}
		d.relaysProvided.Add(1)
		wait = relayRepublish
	}
}

// RelaysProvided returns how many times this peer provided its relay
// record.
func (d *DHT) RelaysProvided() uint64 { return d.relaysProvided.Load() }

// FindRelays returns up to MaxRelayProviders peers that provide the
// mesh's relay key (claims, not confirmed), with their addresses,
// waiting until the lookup ends or ctx is done. Safe for concurrent use.
func (d *DHT) FindRelays(ctx context.Context) ([]libp2ppeer.AddrInfo, error) {
	key, err := RelayKey(d.cfg.Mesh)
	if err != nil {
		return nil, err
	}
	var out []libp2ppeer.AddrInfo
	for ai := range d.kad.FindProvidersAsync(ctx, key, MaxRelayProviders) {
		if ai.ID != d.h.ID() && len(ai.Addrs) > 0 {
			out = append(out, ai)
		}
	}
	if len(out) == 0 && ctx.Err() != nil {
		return nil, fmt.Errorf("discovery: looking relays up: %w", ctx.Err())
	}
	return out, nil
}
