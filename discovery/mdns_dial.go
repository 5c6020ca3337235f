package discovery

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// redialAfter is how long a peer that was just dialed is left alone (by
// announcements: a failed dial is retried on its own schedule).
const redialAfter = 5 * time.Second

// A dial to a peer found by mDNS that fails is tried again up to
// dialRetries times, after a random delay of 1–3 × MDNS.retryDelay
// (defaultRetryDelay outside tests), doubling
// each time. Peers that hear of each other together dial each other
// together; over TCP with a shared port that can be a simultaneous open,
// which fails both dials (both ends of the one connection start TLS as the
// client), and the service may announce no more: without a retry they
// would stay apart. The random delay breaks the tie.
const dialRetries = 4

// defaultRetryDelay is MDNS.retryDelay outside tests.
const defaultRetryDelay = 500 * time.Millisecond

// HandlePeerFound is called by the mDNS service, concurrently and
// repeatedly; it never blocks: when the queue is full the announcement is
// dropped (the peer announces itself again).
func (m *MDNS) HandlePeerFound(ai libp2ppeer.AddrInfo) {
	if ai.ID == m.h.ID() {
		return
	}
	select {
	case m.found <- foundPeer{ai: ai}:
	default:
	}
}

// foundPeer is a peer to dial: announced, or a dial of it to try again.
type foundPeer struct {
	ai    libp2ppeer.AddrInfo
	retry int // 0: announced; n: the nth try again
}

func (m *MDNS) work() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case f := <-m.found:
			if !m.shouldDial(f.ai.ID, f.retry > 0) {
				continue
			}
			ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
			if f.retry > 0 {
				// The failed dial put the peer's addresses in the
				// swarm's dial backoff (5 s and more), which would fail
				// the retry at once: a retry dials them all the same.
				ctx = network.WithForceDirectDial(ctx, "troupe mDNS retry")
			}
			err := m.connect(ctx, f.ai)
			cancel()
			if errors.Is(err, ErrDialBudget) {
				continue // found again at its next announcement
			}
			if err != nil {
				m.log.Debug("discovery: mDNS peer unreachable", "peer", f.ai.ID, "try", f.retry, "err", err)
				if f.retry < dialRetries && !errors.Is(err, ErrRefused) {
					m.later(foundPeer{ai: f.ai, retry: f.retry + 1})
				}
				continue
			}
			m.log.Debug("discovery: connected to mDNS peer", "peer", f.ai.ID)
			m.knew(f.ai.ID, time.Now())
		}
	}
}

// knew records that id was connected to at now.
func (m *MDNS) knew(id libp2ppeer.ID, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.known[id]; !ok && len(m.known) >= knownMax {
		return // the peers known first are the ones looked for
	}
	m.known[id] = now
}

// missing reports whether a peer connected to within knownFor before
// now is not connected, forgetting the older ones.
func (m *MDNS) missing(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	gone := false
	for id, t := range m.known {
		switch {
		case m.h.Network().Connectedness(id) == network.Connected:
			m.known[id] = now
		case now.Sub(t) >= knownFor:
			delete(m.known, id)
		default:
			gone = true
		}
	}
	return gone
}

// later queues f again after a random delay (see dialRetries).
func (m *MDNS) later(f foundPeer) {
	base := m.retryDelay << (f.retry - 1)
	d := base + time.Duration(rand.Int64N(int64(2*base)))
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			select {
			case m.found <- f:
			case <-m.ctx.Done():
			}
		case <-m.ctx.Done():
		}
	}()
}

// shouldDial reports whether to dial id now: not when connected, and for
// an announcement not within redialAfter of the last dial.
func (m *MDNS) shouldDial(id libp2ppeer.ID, retry bool) bool {
	if m.h.Network().Connectedness(id) == network.Connected {
		return false
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.dialed[id]; ok && now.Sub(t) < redialAfter && !retry {
		return false
	}
	for p, t := range m.dialed { // keep the map small
		if now.Sub(t) >= redialAfter {
			delete(m.dialed, p)
		}
	}
	m.dialed[id] = now
	return true
}
