package peer

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/troupe-mesh/troupe/discovery"
)

// Connections is a node's connection budget: once High peers are
// connected, the node disconnects the peers that nothing protects (see
// protect.go) and that are past their grace period, least valued first,
// until Low peers are left, the protected ones included (more when more
// are protected: trim.go); and discovery (mDNS, the DHT) stops dialing
// the peers it finds once the node is connected to Low peers, Low/2 in a
// large mesh (dialTarget; it still learns them). A zero field takes its default.
//
// A mesh of at most Low+1 peers stays fully connected, as a LAN did
// before the budget, and one of fewer than High peers is never trimmed.
// In a larger one a peer holds about Low connections, and a message to a
// peer it is not connected to dials it (lazily, on the first send).
type Connections struct {
	// Low is how many peers a trim leaves, the protected ones included,
	// and how many peers discovery dials, half as many in a large mesh
	// (default DefaultConnsLow).
	Low int
	// High is how many connected peers start a trim (default
	// DefaultConnsHigh; at least Low).
	High int
	// Grace is how long a new connection, or one that carried a message,
	// is left alone (default DefaultConnsGrace); a third of it for a
	// peer no actor message went to or came from since it connected
	// (trim.go).
	Grace time.Duration
}

// The defaults of Connections. High is the 32 connections per peer that
// a mesh of 100 or more peers may hold (docs/scale.md); Low is three
// quarters of it, so that the dials of peers joining between two trims
// do not start a trim each, and a LAN of up to 25 peers stays fully
// connected. Grace outlasts the default Ask timeout and the first
// exchanges of a new peer (identify, the DHT, GossipSub's first
// heartbeats).
const (
	DefaultConnsLow   = 24
	DefaultConnsHigh  = 32
	DefaultConnsGrace = 30 * time.Second
)

// withDefaults returns c with its zero fields set to their defaults.
func (c Connections) withDefaults() Connections {
	if c.Low == 0 {
		c.Low = DefaultConnsLow
	}
	if c.High == 0 {
		c.High = max(DefaultConnsHigh, c.Low)
	}
	if c.Grace == 0 {
		c.Grace = DefaultConnsGrace
	}
	return c
}

// validate reports a budget the connection manager cannot use.
func (c Connections) validate() error {
	switch {
	case c.Low < 0 || c.High < 0 || c.Grace < 0:
		return invalid("connections low %d, high %d, grace %v: none may be negative", c.Low, c.High, c.Grace)
	case c.High != 0 && c.High < max(c.Low, 1):
		return invalid("connections high %d below low %d", c.High, c.Low)
	case c.Low == 0 && c.High != 0 && c.High < DefaultConnsLow:
		return invalid("connections high %d below the default low %d: give low too", c.High, DefaultConnsLow)
	}
	return nil
}

// WithConnections sets the connection budget (see Connections; default:
// DefaultConnsLow, DefaultConnsHigh, DefaultConnsGrace).
func WithConnections(c Connections) Option {
	return func(cfg *config) error {
		if err := c.validate(); err != nil {
			return err
		}
		cfg.conns = c
		return nil
	}
}

// newConnManager returns the host's connection manager for budget c
// (its defaults applied): it keeps the tags and protections of the
// node's peers and of libp2p's services. Its own trims (every 10 s above
// the high mark, keeping Low unprotected connections besides the
// protected ones) are put off for good: the node's guard trims instead
// (trim.go), right after it brought the protections up to date.
func newConnManager(c Connections) (*connmgr.BasicConnMgr, error) {
	cm, err := connmgr.NewConnManager(c.Low, c.High, connmgr.WithGracePeriod(c.Grace), connmgr.WithSilencePeriod(neverTrim))
	if err != nil {
		return nil, fmt.Errorf("peer: connection manager: %w", err)
	}
	return cm, nil
}

// neverTrim is the connection manager's silence period: its background
// trims never come.
const neverTrim = 100 * 365 * 24 * time.Hour

// ErrDialBudget is what a node's dial of a peer discovery found returns
// once it is connected to Connections.Low peers (Low/2 in a large mesh):
// discovery leaves the peer undialed (and does not count it as a
// failure). It is discovery.ErrDialBudget.
var ErrDialBudget = discovery.ErrDialBudget

// dialBudgetFull reports whether discovery should dial no more peers:
// the node is connected to dialTarget peers or more.
func (n *Node) dialBudgetFull() bool {
	return len(n.host.Network().Peers()) >= dialTarget(n.cfg.conns.Low, n.size.Large())
}

// dialTarget is how many connected peers discovery dials up to: low,
// or half of it in a large mesh (the DHT's judgement, names.go). A dial
// makes a connection at both ends: in a mesh larger than the budget,
// peers that each dial low others hold about 2·low on average, beyond
// High (48 against 32 by default), and the trims then close a third of
// what was dialed, to be dialed again. In BenchmarkScale100 those
// rendezvous dials were some 2,400 of the 4,900 outbound connections
// opened after the start (docs/scale.md). Below the threshold nothing
// changes: a small mesh stays fully connected.
func dialTarget(low int, large bool) int {
	if large {
		return max(1, low/2)
	}
	return low
}

// meshSize is the node's judgement of the mesh's size: its DHT's Large
// (the lookup threshold, with its hysteresis: discovery/names.go), false
// without a DHT or before it starts. Safe for concurrent use.
type meshSize struct{ dht atomic.Pointer[discovery.DHT] }

// Large reports whether the mesh is at or above the lookup threshold.
func (m *meshSize) Large() bool {
	d := m.dht.Load()
	return d != nil && d.Large()
}

// departure returns the node's answer to "did a peer that disconnected
// leave the mesh?", for the directory and the groups (their
// WithDeparture): no in a large mesh (size, the lookup threshold's
// judgement), where a disconnection is most likely a trim (this peer's or
// the other's) and the directory holds only the connected peers'
// advertisements, so that its size says nothing of the mesh's; the
// peer's group members then stay while gossip renews them, and go when
// it does not. Otherwise yes in a mesh of at most high peers (those h is
// connected to, or dir holds advertisements of, and itself), where no
// peer holds enough connections to start a trim, so that a disconnection
// is a departure, as on a LAN; no in a larger one. dir is nil until
// advertising starts.
func departure(h host.Host, dir *atomic.Pointer[discovery.Directory], high int, size *meshSize) func(libp2ppeer.ID) bool {
	return func(libp2ppeer.ID) bool {
		if size.Large() {
			return false
		}
		size := len(h.Network().Peers()) + 1
		if d := dir.Load(); d != nil {
			size = max(size, d.Len()+1)
		}
		return size <= high
	}
}

// dhtBucketTag is the tag kad-dht puts on the peers of its routing
// table; it protects under it those of its two nearest-to-half buckets
// (a common prefix of 0 or 1 bit with this peer: three peers in four of
// a mesh, up to 40 of them), which in a 100-peer mesh kept 74–77
// connections per peer past the budget's High of 32 (BenchmarkScale100's
// census). A routing table entry needs no open connection (kad-dht keeps
// a disconnected peer and dials it when a query wants it), so the budget
// turns that protection into a tag of dhtBucketValue: those peers are
// trimmed last among the unprotected ones, not never.
const (
	dhtBucketTag   = "kbucket"
	dhtBucketValue = 10 // kad-dht tags the peers of its other buckets 5
)

// budgetConnMgr is the host's connection manager as libp2p's services
// see it: the node's BasicConnMgr, except that kad-dht's protection of
// its routing table is a tag (dhtBucketTag).
type budgetConnMgr struct{ *connmgr.BasicConnMgr }

// Protect protects p under tag, or tags it when tag is dhtBucketTag.
func (m budgetConnMgr) Protect(p libp2ppeer.ID, tag string) {
	if tag == dhtBucketTag {
		m.TagPeer(p, tag, dhtBucketValue)
		return
	}
	m.BasicConnMgr.Protect(p, tag)
}

// Unprotect undoes Protect and reports whether p is still protected
// under another tag.
func (m budgetConnMgr) Unprotect(p libp2ppeer.ID, tag string) bool {
	if tag == dhtBucketTag {
		m.UntagPeer(p, tag)
		return m.IsProtected(p, "")
	}
	return m.BasicConnMgr.Unprotect(p, tag)
}
