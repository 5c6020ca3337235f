package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
)

// ErrBadMesh reports a mesh name outside [a-z0-9-], not starting with a letter or
// digit, or longer than 32 bytes.
var ErrBadMesh = errors.New("discovery: bad mesh name")

// ErrRefused is the error (wrapped) that a connect function returns for a
// peer that refused the connection, such as one whose allowlist leaves
// this peer out (peer.ErrRefused is this error). Trying again cannot
// change that: a refused dial is not retried.
var ErrRefused = errors.New("connection refused by the remote peer")

// ErrDialBudget is the error (wrapped) that a connect function returns
// when the node holds as many connections as its budget lets discovery
// dial (peer.Connections.Low): the peer found is left undialed, and not
// tried again until it is found again.
var ErrDialBudget = errors.New("discovery: dial budget reached")

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

const (
	// ifacePoll is how often the interfaces are looked at: no portable
	// event announces a link coming up.
	ifacePoll = 2 * time.Second
	// restartGap is the least time between two restarts of the service.
	restartGap = time.Second
	// requeryEvery is how soon the service is restarted (which queries
	// the LAN again) once a peer it connected to within knownFor is not
	// connected: after a partition, or a peer that missed our
	// announcement, the peers answer the new query. While peers stay
	// missing the restarts slow down (nextRequery), to requeryMax apart.
	// knownMax bounds the peers remembered so.
	requeryEvery = 10 * time.Second
	requeryMax   = 5 * time.Minute
	knownFor     = 15 * time.Minute
	knownMax     = 256
)

// nextRequery returns the wait before the next look for missing peers
// after one that waited wait: requeryEvery while none is missing, twice
// the last wait (at most requeryMax) while some are. A LAN larger than
// the connection budget always has peers trimmed, so missing: at a fixed
// 10 s every node would restart, and every peer answer its query, every
// 10 s (some 1000 multicast answers a second among 100 peers).
func nextRequery(wait time.Duration, missing bool) time.Duration {
	if !missing {
		return requeryEvery
	}
	return min(2*wait, requeryMax)
}

// MDNS announces a host on the LAN and connects to the peers it finds. The
// underlying service joins its multicast groups on the interfaces that are
// up when it starts, so MDNS restarts it when the interfaces change (a
// laptop's Wi-Fi coming up later) or the host's addresses do (the records
// carry them). Its methods are safe for concurrent use.
type MDNS struct {
	h       host.Host
	service string
	connect func(context.Context, libp2ppeer.AddrInfo) error
	log     *slog.Logger
	found   chan foundPeer
	// retryDelay is the least wait before the first retry of a failed
	// dial (see dialRetries): defaultRetryDelay, or a test's.
	retryDelay time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards dialed, known, svc, addrs and closed
	dialed map[libp2ppeer.ID]time.Time
	known  map[libp2ppeer.ID]time.Time // peers connected to, when last
	svc    mdns.Service                // nil while no interface can carry it
	addrs  string                      // the addresses the running service announces
	closed bool

	restarts atomic.Uint64
}

// StartMDNS starts announcing h for the mesh and connecting to the peers
// found, with connect (a node's Connect). Without a multicast interface
// that can carry it yet, it waits for one, trying again at every poll.
// Options: WithMesh (required), WithLogger. Close stops it.
func StartMDNS(h host.Host, connect func(context.Context, libp2ppeer.AddrInfo) error, opts ...Option) (*MDNS, error) {
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	mesh, logger := o.mesh, o.logger
	addrEvents, err := h.EventBus().Subscribe(new(event.EvtLocalAddressesUpdated))
	if err != nil {
		return nil, fmt.Errorf("discovery: mDNS: %w", err)
	}
	m := newMDNS(h, ServiceName(mesh), connect, logger)
	ifaces := interfaceState()
	if err := m.restart(); err != nil {
		// No interface yet, or one not ready for a multicast group: the
		// watcher starts the service once one is (see watch).
		logger.Warn("discovery: no multicast interface yet; mDNS starts when one comes up", "err", err)
	}
	m.wg.Add(1)
	go m.watch(ifaces, addrEvents)
	return m, nil
}

// newMDNS returns an MDNS whose workers dial the peers found, with no
// service running yet.
func newMDNS(h host.Host, service string, connect func(context.Context, libp2ppeer.AddrInfo) error, logger *slog.Logger) *MDNS {
	m := &MDNS{
		h: h, service: service, connect: connect, log: logger,
		found:      make(chan foundPeer, 64),
		retryDelay: defaultRetryDelay,
		dialed:     make(map[libp2ppeer.ID]time.Time),
		known:      make(map[libp2ppeer.ID]time.Time),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(2)
	for range 2 {
		go m.work()
	}
	return m
}

// restart stops the service, if running, and starts a new one on the
// interfaces up now.
func (m *MDNS) restart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.svc != nil {
		_ = m.svc.Close()
		m.svc = nil
	}
	if m.closed {
		return nil
	}
	addrs := m.listenAddrs()
	svc := mdns.NewMdnsService(m.h, m.service, m)
	if err := svc.Start(); err != nil {
		_ = svc.Close()
		return err
	}
	m.svc, m.addrs = svc, addrs
	return nil
}

// listenAddrs describes the addresses the service announces.
func (m *MDNS) listenAddrs() string {
	addrs, _ := m.h.Network().InterfaceListenAddresses()
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// addrsChanged reports whether the host's addresses differ from those the
// running service announces (the address event also replays the current
// addresses to a new subscriber, which must not restart it).
func (m *MDNS) addrsChanged() bool {
	now := m.listenAddrs()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.svc == nil || now != m.addrs
}

// watch restarts the service when the multicast interfaces or the host's
// addresses change, at most once per restartGap.
func (m *MDNS) watch(ifaces string, addrEvents event.Subscription) {
	defer m.wg.Done()
	defer addrEvents.Close()
	tick := time.NewTicker(ifacePoll)
	defer tick.Stop()
	requeryWait := requeryEvery
	requery := time.NewTimer(requeryWait)
	defer requery.Stop()
	var due <-chan time.Time // a restart waiting for restartGap
	var last time.Time
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
			now := interfaceState()
			if now == ifaces && (now == "" || m.running()) {
				continue
			}
			// The interfaces changed, or there is one and the service is
			// not running: a start that failed (an interface that was
			// not ready yet for a multicast group) is tried again at
			// the next poll, not only at the next change.
			ifaces = now
		case _, ok := <-addrEvents.Out():
			if !ok {
				return
			}
			if !m.addrsChanged() {
				continue
			}
		case <-requery.C:
			gone := m.missing(time.Now())
			requeryWait = nextRequery(requeryWait, gone)
			requery.Reset(requeryWait)
			if !gone {
				continue
			}
		case <-due:
			due = nil
		}
		if wait := time.Until(last.Add(restartGap)); wait > 0 {
			if due == nil {
				due = time.After(wait)
			}
			continue
		}
		last = time.Now()
		if err := m.restart(); err != nil {
			m.log.Debug("discovery: mDNS restart", "err", err)
		} else {
			m.restarts.Add(1)
			m.log.Debug("discovery: mDNS restarted", "interfaces", ifaces)
		}
	}
}

// running reports whether the service runs.
func (m *MDNS) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.svc != nil
}

// Restarts returns how many times the service was restarted (successfully).
func (m *MDNS) Restarts() uint64 { return m.restarts.Load() }

// interfaceState describes the interfaces mDNS can use (up, multicast,
// with an address): it changes when one comes up, goes down or changes
// address. It is "" when there is none.
func interfaceState() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagMulticast == 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil || len(addrs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s %v", ifi.Name, ifi.Flags&net.FlagRunning != 0)
		for _, a := range addrs {
			b.WriteString(" " + a.String())
		}
		b.WriteString(";")
	}
	return b.String()
}

// Close stops announcing, watching and dialing, and waits for its
// goroutines (ctx is accepted for the library's uniform Close(ctx) error: every
// goroutine here ends at once when told to, so Close waits for them
// whatever ctx says, as Router.Close does after its drain.)
func (m *MDNS) Close(context.Context) error {
	m.cancel()
	m.wg.Wait() // the watcher restarts no more
	m.mu.Lock()
	m.closed = true
	svc := m.svc
	m.svc = nil
	m.mu.Unlock()
	if svc != nil {
		return svc.Close()
	}
	return nil
}
