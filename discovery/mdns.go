package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
)

// ErrBadMesh reports a mesh name outside [a-z0-9-], not starting with a letter or
// digit, or longer than 32 bytes.
var ErrBadMesh = errors.New("discovery: bad mesh name")

var meshRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// CheckMesh validates a mesh name.
func CheckMesh(mesh string) error {
	if !meshRE.MatchString(mesh) {
		return fmt.Errorf("%w: %q (use 1-32 of a-z, 0-9 and '-', starting with a letter or digit)", ErrBadMesh, mesh)
	}
	return nil
}

// ServiceName is the mDNS service a mesh is announced under.
func ServiceName(mesh string) string { return "_troupe-" + mesh + "._udp" }

// redialAfter is how long a peer that was just dialed is left alone.
const redialAfter = 5 * time.Second

// MDNS announces a host on the LAN and connects to the peers it finds.
type MDNS struct {
	h       host.Host
	svc     mdns.Service
	connect func(context.Context, libp2ppeer.AddrInfo) error
	log     *slog.Logger
	found   chan libp2ppeer.AddrInfo

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards dialed
	dialed map[libp2ppeer.ID]time.Time
}

// StartMDNS starts announcing h for mesh and connecting to the peers found,
// with connect (a node's Connect). Close stops it.
func StartMDNS(h host.Host, mesh string, connect func(context.Context, libp2ppeer.AddrInfo) error, logger *slog.Logger) (*MDNS, error) {
	if err := CheckMesh(mesh); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	m := &MDNS{
		h: h, connect: connect, log: logger,
		found:  make(chan libp2ppeer.AddrInfo, 64),
		dialed: make(map[libp2ppeer.ID]time.Time),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.svc = mdns.NewMdnsService(h, ServiceName(mesh), m)
	if err := m.svc.Start(); err != nil {
		m.cancel()
		_ = m.svc.Close()
		return nil, fmt.Errorf("discovery: mDNS: %w", err)
	}
	m.wg.Add(2)
	for range 2 {
		go m.work()
	}
	return m, nil
}

// HandlePeerFound is called by the mDNS service, concurrently and
// repeatedly; it never blocks: when the queue is full the announcement is
// dropped (the peer announces itself again).
func (m *MDNS) HandlePeerFound(ai libp2ppeer.AddrInfo) {
	if ai.ID == m.h.ID() {
		return
	}
	select {
	case m.found <- ai:
	default:
	}
}

func (m *MDNS) work() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case ai := <-m.found:
			if !m.shouldDial(ai.ID) {
				continue
			}
			ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
			err := m.connect(ctx, ai)
			cancel()
			if err != nil {
				m.log.Debug("discovery: mDNS peer unreachable", "peer", ai.ID, "err", err)
				continue
			}
			m.log.Debug("discovery: connected to mDNS peer", "peer", ai.ID)
		}
	}
}

func (m *MDNS) shouldDial(id libp2ppeer.ID) bool {
	if m.h.Network().Connectedness(id) == network.Connected {
		return false
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.dialed[id]; ok && now.Sub(t) < redialAfter {
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

// Close stops announcing and dialing and waits for its goroutines.
func (m *MDNS) Close() error {
	m.cancel()
	err := m.svc.Close()
	m.wg.Wait()
	return err
}
