package peer

import (
	"fmt"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/troupe-mesh/troupe/codec"
)

// Limits caps what a node's libp2p host may use. A zero field keeps
// libp2p's default for it, which scales with the machine's memory and file
// descriptor limit; a positive field replaces it. What a limit refuses (a
// connection, a stream, a stream's buffer growing) fails in libp2p with a
// "resource limit exceeded" error: a refused connection fails Connect, a
// refused stream makes the messages for that peer wait and redial, a
// refused buffer growth slows the stream down. The limits apply to all of
// the host's protocols: actor messages, groups, discovery.
type Limits struct {
	// Memory is the most memory, in bytes, the host may reserve in all:
	// mostly stream and connection buffers, and what the readers of
	// actor streams hold for large messages and frames being received
	// (a message they cannot reserve memory for resets its stream, and
	// whatever that stream still carried is lost).
	Memory int64
	// FDs is the most file descriptors the host may use.
	FDs int
	// Conns and ConnsInbound cap the host's connections in all and the
	// inbound ones.
	Conns, ConnsInbound int
	// Streams and StreamsInbound cap the host's open streams in all and
	// the inbound ones.
	Streams, StreamsInbound int
	// ConnsPerPeer and StreamsPerPeer cap the connections and streams of
	// any one peer.
	ConnsPerPeer, StreamsPerPeer int
	// StreamWindow is the initial receive window of every stream, in
	// bytes: how much a peer may send on one stream before this node has
	// read it (0: DefaultStreamWindow; from MinStreamWindow to
	// MaxStreamWindow). The muxer grows a window up to MaxStreamWindow on
	// links whose round trip makes it the bottleneck, reserving the growth
	// in Memory; the initial window beyond 256 KiB is not reserved.
	//
	// A larger window keeps a fast stream going through the receiver's
	// pauses (a garbage collection, a busy core): on loopback the actor
	// stream's throughput rose about 13% from 256 KiB (libp2p's default)
	// to 1 MiB. A smaller one bounds how long a small message waits behind
	// bulk data already sent on the same stream.
	StreamWindow int
}

// The bounds and the default of Limits.StreamWindow.
const (
	MinStreamWindow     = 256 << 10 // the muxer's own initial window
	DefaultStreamWindow = 1 << 20
	MaxStreamWindow     = 16 << 20 // the most the muxer grows a window to
)

// validate reports a negative limit.
func (l Limits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"memory", l.Memory}, {"fds", int64(l.FDs)}, {"conns", int64(l.Conns)},
		{"conns inbound", int64(l.ConnsInbound)}, {"streams", int64(l.Streams)},
		{"streams inbound", int64(l.StreamsInbound)}, {"conns per peer", int64(l.ConnsPerPeer)},
		{"streams per peer", int64(l.StreamsPerPeer)}, {"stream window", int64(l.StreamWindow)},
	} {
		if f.v < 0 {
			return invalid("resource limit %s is %d: must be positive, or 0 for the default", f.name, f.v)
		}
	}
	if w := l.StreamWindow; w != 0 && (w < MinStreamWindow || w > MaxStreamWindow) {
		return invalid("stream window %d bytes: must be from %d (256 KiB) to %d (16 MiB), or 0 for the default", w, MinStreamWindow, MaxStreamWindow)
	}
	return nil
}

// muxer returns the stream muxer: libp2p's yamux with the initial stream
// window from l.
func muxer(l Limits) *yamux.Transport {
	t := *yamux.DefaultTransport // a copy: the default is shared
	w := l.StreamWindow
	if w == 0 {
		w = DefaultStreamWindow
	}
	t.InitialStreamWindowSize = uint32(w)
	return &t
}

// WithLimits caps the resources of the node's libp2p host (see Limits;
// default: libp2p's limits scaled to the machine).
func WithLimits(l Limits) Option {
	return func(c *config) error {
		if err := l.validate(); err != nil {
			return err
		}
		c.limits = l
		return nil
	}
}

// resourceManager returns the host's resource manager: libp2p's default
// limits for its bundled services, scaled to the machine, with l's
// non-zero fields in place of the system-wide and per-peer defaults, and
// room in every stream for a message of maxFrame bytes.
//
// The routing charges a stream's reader for a large frame or message in
// the stream's scope, so the limits of the stream, of a peer on a
// protocol, of a peer, of a protocol and of the whole host all bound it
// (16 MiB, 16 MiB, then hundreds of MiB by default, less on a small
// machine): with a maximum frame too large for one of them, a legitimate
// message would reset its stream, so each grows to fit one. A memory
// limit set in l that cannot fit one is an error.
func resourceManager(l Limits, maxFrame int) (network.ResourceManager, error) {
	cfg, err := limitConfig(l, maxFrame)
	if err != nil {
		return nil, err
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(cfg))
	if err != nil {
		return nil, fmt.Errorf("peer: resource manager: %w", err)
	}
	return rm, nil
}

// limitConfig is the resource manager's configuration for l on this
// machine (resourceManager says how it is made).
func limitConfig(l Limits, maxFrame int) (rcmgr.ConcreteLimitConfig, error) {
	scaling := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&scaling)
	scaled := scaling.AutoScale()
	def, need := scaled.ToPartialLimitConfig(), streamMemory(maxFrame)
	system := rcmgr.LimitVal64(l.Memory)
	switch {
	case l.Memory == 0:
		system = atLeast(def.System.Memory, need)
	case system < need:
		return rcmgr.ConcreteLimitConfig{}, invalid("resource limit memory is %d bytes: a message of the maximum frame (%d bytes) needs at least %d", l.Memory, maxFrame, need)
	}
	partial := rcmgr.PartialLimitConfig{
		System: rcmgr.ResourceLimits{
			Memory: system, FD: rcmgr.LimitVal(l.FDs),
			Conns: rcmgr.LimitVal(l.Conns), ConnsInbound: rcmgr.LimitVal(l.ConnsInbound),
			Streams: rcmgr.LimitVal(l.Streams), StreamsInbound: rcmgr.LimitVal(l.StreamsInbound),
		},
		PeerDefault: rcmgr.ResourceLimits{
			Conns: rcmgr.LimitVal(l.ConnsPerPeer), Streams: rcmgr.LimitVal(l.StreamsPerPeer),
			Memory: atLeast(def.PeerDefault.Memory, need),
		},
		Stream:              rcmgr.ResourceLimits{Memory: atLeast(def.Stream.Memory, need)},
		ProtocolDefault:     rcmgr.ResourceLimits{Memory: atLeast(def.ProtocolDefault.Memory, need)},
		ProtocolPeerDefault: rcmgr.ResourceLimits{Memory: atLeast(def.ProtocolPeerDefault.Memory, need)},
	}
	return partial.Build(scaled), nil
}

// EffectiveLimits returns the limits a node made with l and a maximum
// frame of maxFrame bytes (0: codec's default) holds on this machine:
// every zero field of l filled in with libp2p's default as scaled to
// this machine's memory and file descriptors, StreamWindow with its
// default. A field without a limit is -1. It fails as New would for
// limits that cannot hold one message of the maximum frame.
func EffectiveLimits(l Limits, maxFrame int) (Limits, error) {
	if maxFrame == 0 {
		maxFrame = codec.DefaultMaxFrame
	}
	if err := l.validate(); err != nil {
		return Limits{}, err
	}
	cfg, err := limitConfig(l, maxFrame)
	if err != nil {
		return Limits{}, err
	}
	p := cfg.ToPartialLimitConfig()
	n := func(v rcmgr.LimitVal) int {
		if v == rcmgr.Unlimited {
			return -1
		}
		return int(v)
	}
	mem := int64(p.System.Memory)
	if p.System.Memory == rcmgr.Unlimited64 {
		mem = -1
	}
	window := l.StreamWindow
	if window == 0 {
		window = DefaultStreamWindow
	}
	return Limits{
		Memory: mem, FDs: n(p.System.FD),
		Conns: n(p.System.Conns), ConnsInbound: n(p.System.ConnsInbound),
		Streams: n(p.System.Streams), StreamsInbound: n(p.System.StreamsInbound),
		ConnsPerPeer: n(p.PeerDefault.Conns), StreamsPerPeer: n(p.PeerDefault.Streams),
		StreamWindow: window,
	}, nil
}

// streamMemory is the memory limit a stream (and each scope above it)
// needs so that its reader may hold a message of maxFrame bytes and a
// frame of fragments beside it within the share of the limit it may
// fill (204/256, just under 80%).
func streamMemory(maxFrame int) rcmgr.LimitVal64 {
	return rcmgr.LimitVal64((int64(maxFrame) + 1<<20) * 4 / 3)
}

// atLeast is a limit of at least need where the default is def: 0 (the
// default) when def is enough.
func atLeast(def, need rcmgr.LimitVal64) rcmgr.LimitVal64 {
	if def >= need {
		return 0
	}
	return need
}
