package peer

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/peer/internal/redial"
)

// The latency and liveness prober (peer/internal/latency) pings the
// connected peers; the node tells it which peers the liveness timeout
// applies to (life) and declares gone the ones it finds silent (silent),
// which the redialer (peer/internal/redial) dials again, as it does the
// pinned and bootstrap peers that disconnect.

// livenessReasons are the reasons to keep a connection (protect.go)
// that make the liveness timeout apply to the peer: monitors or links
// either way, Asks in flight, messages queued for the peer or of the
// peer's not handled yet.
const livenessReasons = protEdges | protBusy | protHeld

// DefaultLiveness is the liveness timeout of a node without WithLiveness.
const DefaultLiveness = 15 * time.Second

// MinLiveness is the shortest liveness timeout WithLiveness takes.
const MinLiveness = 500 * time.Millisecond

// WithLiveness sets the liveness timeout (default DefaultLiveness): a
// connected peer something here waits on (a monitor or link either way,
// an Ask, messages queued) that answers no ping and sends no message for
// that long is declared gone, within timeout + 1 s of going silent, as
// if it had disconnected. Zero turns it off (a silent peer is then
// noticed by the transports' keepalives, some 35–40 s). Either way the
// prober pings every peer every 30 s for its round trip. A timeout below
// MinLiveness, or negative, is an error wrapping ErrInvalidOption.
func WithLiveness(timeout time.Duration) Option {
	return func(cfg *config) error {
		if timeout != 0 && timeout < MinLiveness {
			return invalid("liveness %v: at least %v, or 0 for none", timeout, MinLiveness)
		}
		cfg.liveness, cfg.livenessSet = timeout, true
		return nil
	}
}

// life is the prober's latency.Life: the liveness timeout applies to p if
// the guard's protection keeps it for livenessReasons. Safe for
// concurrent use.
func (n *Node) life(p libp2ppeer.ID) (need bool, received uint64) {
	f := n.guard.workFacts(p)
	r, _ := protection(peerMark{}, f, time.Now(), 0) // no grace: recent traffic alone is no reason
	return r&livenessReasons != 0, f.activity.Received
}

// silent declares connected peer p gone: the prober found it silent for
// the liveness timeout. Its connections are closed (off the prober's
// goroutine: a close may wait for a stuck connection's writes), which
// the routing turns into PeerDown, and the redialer dials it again.
func (n *Node) silent(p libp2ppeer.ID) {
	if n.closing.Load() || n.host.Network().Connectedness(p) != network.Connected {
		return
	}
	n.cfg.logger.Info("peer: a silent peer is declared gone", "peer", p, "liveness", n.cfg.liveness)
	n.redial.Declared(p)
	n.redial.GoClose(p)
}

// startRedialer starts n's redialer: the peers the application connected
// to (pinTag) are redialed for good, the bootstrap peers and those
// declared gone below the budget.
func startRedialer(n *Node) (*redial.Redialer, error) {
	return redial.Start(redial.Config{
		Host:       n.host,
		Bootstrap:  n.cfg.bootstrap,
		Pinned:     func(p libp2ppeer.ID) bool { return n.cm.IsProtected(p, pinTag) },
		BudgetFull: n.dialBudgetFull,
		Connect:    n.connect,
		Closing:    n.closing.Load,
	})
}
