package relay

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/host/relaysvc"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/prometheus/client_golang/prometheus"
)

// Relay limits per mesh membership. go-libp2p's relay applies one limit
// to every circuit (its defaults: 2 minutes and 128 KiB each way), so a
// pair of the mesh's own peers that cannot punch through their NATs would
// see a declared loss at every cut. Troupe runs go-libp2p's relay without
// a limit, on a host whose hop handler and stop streams it wraps
// (stream.go): a circuit between two members of the mesh (same PSK,
// in the allowlist, or named by WithRelayMembers) is relayed without
// limits on time or data; any other circuit (a stranger at either end)
// keeps the stranger limit, libp2p's defaults unless
// Config.Stranger (peer.WithRelayStrangerLimit) says otherwise, enforced by the wrappers as
// libp2p does (a deadline for the circuit, then a reset; the data cap as
// an end of stream each way). Both ends are told their circuit's limit in
// the relay's messages, as libp2p tells them: a member's circuit carries
// an empty limit, so its connection still counts as relayed (Limited) and
// routing moves its links off it when a direct connection comes
// (routing/relaymove.go). Reservations and circuits stay bounded by
// libp2p's resources (128 reservations, 8 per IP; 16 circuits per peer)
// and are counted (Service.Stats: peer.Node.RelayStats, troupe_relay_*).

// Config is what a relay needs of its node.
type Config struct {
	// All: every peer that can connect is a member (a private network
	// or an allowlist).
	All bool
	// Members are the peers the relay treats as members of its mesh
	// (peer.WithRelayMembers).
	Members []libp2ppeer.ID
	// Stranger is the limit of a circuit with a stranger at either end;
	// nil: libp2p's default.
	Stranger *relayv2.RelayLimit
	// Prom, if not nil, gets libp2p's relay metrics too, as
	// libp2p.EnableRelayService gives them.
	Prom prometheus.Registerer
}

// Service is a node's relay: go-libp2p's relay manager (which runs the
// relay while the node is publicly reachable) on a relayHost.
type Service struct {
	mgr     *relaysvc.RelayManager
	metrics *relayMetrics
}

// Start starts a relay service on h with cfg's limits.
func Start(h host.Host, cfg Config) *Service {
	stranger := cfg.Stranger
	if stranger == nil {
		stranger = relayv2.DefaultLimit()
	}
	m := new(relayMetrics)
	if cfg.Prom != nil { // libp2p's relay metrics too, as libp2p.EnableRelayService gave them
		m.next = relayv2.NewMetricsTracer(relayv2.WithRegisterer(cfg.Prom))
	}
	rh := &relayHost{Host: h, pol: relayPolicy{all: cfg.All, members: memberSet(cfg.Members), stranger: *stranger}, metrics: m}
	res := relayv2.DefaultResources()
	res.Limit = nil // the wrappers limit strangers' circuits
	return &Service{mgr: relaysvc.NewRelayManager(rh, relayv2.WithResources(res), relayv2.WithMetricsTracer(m)), metrics: m}
}

// Close stops the relay (its circuits end with the host). A nil Service
// is none: Close does nothing.
func (s *Service) Close() {
	if s != nil {
		s.mgr.Close()
	}
}

// Stats counts what a relay serves.
type Stats struct {
	Reservations   int64  // reservations held now
	Circuits       int64  // circuits open now
	MemberCircuits uint64 // circuits opened between two members (no limits), in total
	Cut            uint64 // stranger circuit ends cut at their limit (time or data), in total
}

// Stats returns what the relay serves now; zero for a nil Service.
func (s *Service) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	m := s.metrics
	return Stats{Reservations: m.reservations.Load(), Circuits: m.circuits.Load(),
		MemberCircuits: m.members.Load(), Cut: m.cut.Load()}
}

func memberSet(ids []libp2ppeer.ID) map[libp2ppeer.ID]bool {
	m := make(map[libp2ppeer.ID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// relayPolicy says which limit a circuit gets: a pure core, read only
// after construction.
type relayPolicy struct {
	all      bool // PSK or allowlist: every peer that connects is a member
	members  map[libp2ppeer.ID]bool
	stranger relayv2.RelayLimit
}

// member reports whether id is a member of the relay's mesh.
func (p relayPolicy) member(id libp2ppeer.ID) bool { return p.all || p.members[id] }

// limit returns the limit of a circuit between a and b (or of a's
// reservation, with b == a): nil for two members (no limit), else the
// stranger limit.
func (p relayPolicy) limit(a, b libp2ppeer.ID) *relayv2.RelayLimit {
	if p.member(a) && p.member(b) {
		return nil
	}
	l := p.stranger
	return &l
}

// limitMsg is what the relay tells a circuit's ends of limit l: an empty
// limit for none (the connection is still Limited, so relayed, to them:
// routing moves off it when it can), else its duration (whole seconds,
// at least 1) and data.
func limitMsg(l *relayv2.RelayLimit) *pbv2.Limit {
	if l == nil {
		return &pbv2.Limit{}
	}
	d, data := uint32(max(1, l.Duration/time.Second)), uint64(l.Data)
	return &pbv2.Limit{Duration: &d, Data: &data}
}

// relayHost is the host go-libp2p's relay runs on: the node's, with the
// relay's hop streams and its stop streams wrapped (stream.go).
type relayHost struct {
	host.Host
	pol     relayPolicy
	metrics *relayMetrics
}

// SetStreamHandler registers handler, and for the hop protocol a handler
// that gives it wrapped streams.
func (h *relayHost) SetStreamHandler(pid protocol.ID, handler network.StreamHandler) {
	if pid == proto.ProtoIDv2Hop {
		h.Host.SetStreamHandler(pid, func(s network.Stream) { handler(newRelayStream(s, h, true)) })
		return
	}
	h.Host.SetStreamHandler(pid, handler)
}

// NewStream opens a stream, wrapped when it is a stop stream (the relay's
// to a circuit's destination).
func (h *relayHost) NewStream(ctx context.Context, p libp2ppeer.ID, pids ...protocol.ID) (network.Stream, error) {
	s, err := h.Host.NewStream(ctx, p, pids...)
	if err != nil || !slices.Contains(pids, proto.ProtoIDv2Stop) {
		return s, err
	}
	return newRelayStream(s, h, false), nil
}

// relayMetrics counts reservations and circuits from the relay's tracer
// (relayv2.MetricsTracer), and what the wrappers see; it passes each
// event on to next (libp2p's own tracer, with WithPrometheus).
type relayMetrics struct {
	reservations, circuits atomic.Int64
	members, cut           atomic.Uint64
	next                   relayv2.MetricsTracer // nil: none
}

// RelayStatus implements relayv2.MetricsTracer: the relay stopped drops
// its reservations.
func (m *relayMetrics) RelayStatus(enabled bool) {
	if !enabled {
		m.reservations.Store(0)
	}
	if m.next != nil {
		m.next.RelayStatus(enabled)
	}
}

// ConnectionOpened implements relayv2.MetricsTracer.
func (m *relayMetrics) ConnectionOpened() {
	m.circuits.Add(1)
	if m.next != nil {
		m.next.ConnectionOpened()
	}
}

// ConnectionClosed implements relayv2.MetricsTracer.
func (m *relayMetrics) ConnectionClosed(d time.Duration) {
	m.circuits.Add(-1)
	if m.next != nil {
		m.next.ConnectionClosed(d)
	}
}

// ConnectionRequestHandled implements relayv2.MetricsTracer.
func (m *relayMetrics) ConnectionRequestHandled(st pbv2.Status) {
	if m.next != nil {
		m.next.ConnectionRequestHandled(st)
	}
}

// ReservationAllowed implements relayv2.MetricsTracer.
func (m *relayMetrics) ReservationAllowed(renewal bool) {
	if !renewal {
		m.reservations.Add(1)
	}
	if m.next != nil {
		m.next.ReservationAllowed(renewal)
	}
}

// ReservationClosed implements relayv2.MetricsTracer.
func (m *relayMetrics) ReservationClosed(n int) {
	if m.reservations.Add(-int64(n)) < 0 { // after a stop, gc's count
		m.reservations.Store(0)
	}
	if m.next != nil {
		m.next.ReservationClosed(n)
	}
}

// ReservationRequestHandled implements relayv2.MetricsTracer.
func (m *relayMetrics) ReservationRequestHandled(st pbv2.Status) {
	if m.next != nil {
		m.next.ReservationRequestHandled(st)
	}
}

// BytesTransferred implements relayv2.MetricsTracer.
func (m *relayMetrics) BytesTransferred(n int) {
	if m.next != nil {
		m.next.BytesTransferred(n)
	}
}
