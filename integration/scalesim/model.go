package scalesim

import (
	"time"

	"github.com/troupe-mesh/troupe/discovery"
)

// The background model of docs/scale.md ("Model"): the bytes per second
// a peer of an idle mesh of n peers writes, by source. The sizes are
// bytes on the wire (TLS or Noise records, yamux frames and multistream
// negotiation included).
const (
	// PingBytes is what one end of a connection sends for one latency
	// ping exchange (a new stream, its protocol negotiation, 32 bytes,
	// the close; yamux's keepalive folded in). Each end takes part in
	// two every 30 s (peer/internal/latency): its own ping and its echo of
	// the other's. Measured: 5 idle nodes, all connected, no groups,
	// sent 59.5 bytes a second each over 4 connections (TCP_INFO, 60 s).
	PingBytes = 225
	// MsgBytes is what a peer writes, on average, per message published
	// on a mesh-wide topic (an advertisement, a presence renewal):
	// its forwards to mesh peers, the duplicates and IHAVE gossip of it,
	// over all peers. From one BenchmarkScale30 run (its idle bytes
	// less its pings, over its mesh-wide messages a second) that was
	// not recorded; the run docs/benchmarks.md records gives about 600
	// (docs/scale.md, "Model", says so).
	MsgBytes = 270
	// SummaryBytes is what a directory pull's request carries per
	// advertisement held (discovery/adsync.go), one pull every 30 s.
	SummaryBytes = 60
	// AdBytes is one signed advertisement in an exchange's answer (a few
	// addresses, a few names), and ExchangeBytes a directory exchange's
	// own cost at each end, taken as a ping's (a new stream and its
	// negotiation): neither is measured.
	AdBytes, ExchangeBytes = 400, PingBytes
)

// Background is the model's bytes per second per peer, by source.
type Background struct {
	Pings, Ads, Presence, Pulls, Total float64
}

// Model returns the background bytes per second of one peer of an idle
// mesh of n peers, each holding c connections, every peer with one
// member in one mesh-wide group, advertisements living adTTL. From the
// lookup threshold (discovery.DefaultLookupAbove) the directory is
// narrow (discovery/ads_scope.go): no advertisement gossip, and each
// connected peer is asked for its own advertisement every two thirds
// of adTTL, a request summarising the c held and one advertisement
// back.
func Model(n, c int, adTTL time.Duration) Background {
	var b Background
	b.Pings = 2 * float64(c) * PingBytes / 30
	b.Presence = float64(n) / 30 * MsgBytes
	if n >= discovery.DefaultLookupAbove {
		refresh := adTTL.Seconds() * 2 / 3
		b.Pulls = float64(c) / refresh * (float64(c)*SummaryBytes + AdBytes + 2*ExchangeBytes)
	} else {
		b.Ads = float64(n) / (adTTL.Seconds() / 3) * MsgBytes
		b.Pulls = float64(n-1) * SummaryBytes / 30
	}
	b.Total = b.Pings + b.Ads + b.Presence + b.Pulls
	return b
}
