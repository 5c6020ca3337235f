//go:build linux

package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// impairment is what a chaosLink does to each packet, as tc netem would
// (the kernel here has no sch_netem: CONFIG_NET_SCH_NETEM is not set, so
// the link is a user-space one between two TUN devices).
type impairment struct {
	Loss      float64       // share of packets dropped
	Delay     time.Duration // every packet waits Delay ± Jitter (uniform) ...
	Jitter    time.Duration
	Reorder   float64 // ... but this share goes at once, overtaking the others
	Duplicate float64 // share of packets sent twice (the copy with its own delay)
}

// chaosImpairment is the bad network: 5 % loss, 100 ms ± 50 ms,
// 1 % reordering and 1 % duplication, each way.
var chaosImpairment = impairment{Loss: 0.05, Delay: 100 * time.Millisecond, Jitter: 50 * time.Millisecond, Reorder: 0.01, Duplicate: 0.01}

// chaosLink joins two namespaces by a TUN device in each (tun0, a
// point-to-point IPv4 link 10.232.0.1 <-> 10.232.0.2) and carries every
// packet between them through the test process, which applies the
// impairment and can cut the link (every packet dropped, as an iptables
// DROP would: nothing fails on either side).
type chaosLink struct {
	imp      atomic.Pointer[impairment]
	cut      atomic.Bool
	wg       sync.WaitGroup
	tuns     [2]*os.File
	carried  atomic.Uint64 // packets handed on (copies included)
	dropped  atomic.Uint64 // by the impairment or the cut
	stopping atomic.Bool

	mu   sync.Mutex // guards syns
	syns []synEvent
}

// synEvent is a TCP SYN (or SYN-ACK) the link saw: when, which way
// (from side 0 or 1), and whether it was dropped.
type synEvent struct {
	at      time.Time
	from    int
	ack     bool
	dropped bool
	srcPort uint16
}

// tcpSyn reports whether an IPv4 packet is a TCP SYN, and a SYN-ACK.
func tcpSyn(pkt []byte) (syn, ack bool, srcPort uint16) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 || pkt[9] != 6 {
		return false, false, 0
	}
	ihl := int(pkt[0]&0x0f) * 4
	if len(pkt) < ihl+14 {
		return false, false, 0
	}
	flags := pkt[ihl+13]
	return flags&0x02 != 0, flags&0x10 != 0, uint16(pkt[ihl])<<8 | uint16(pkt[ihl+1])
}

// synsSince returns the SYNs seen since t.
func (l *chaosLink) synsSince(t time.Time) []synEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []synEvent
	for _, e := range l.syns {
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// chaosAddr is the address of side i (0 or 1) of a chaosLink.
func chaosAddr(i int) string { return fmt.Sprintf("10.232.0.%d", i+1) }

// newChaosLink builds the link between namespaces a and b and starts
// carrying packets, unimpaired; it stops when the test ends.
func newChaosLink(t *testing.T, n *netns, a, b string) *chaosLink {
	t.Helper()
	l := &chaosLink{}
	l.imp.Store(&impairment{})
	t.Cleanup(l.stop) // first: a skip or failure below must not leave a TUN open (it holds its namespace)
	for i, ns := range []string{a, b} {
		f, err := openTun(ns, "tun0")
		if err != nil {
			skipNetns(t, fmt.Sprintf("a TUN device in %s: %v", ns, err))
		}
		l.tuns[i] = f
		n.ip("-n", ns, "addr", "add", chaosAddr(i), "peer", chaosAddr(1-i), "dev", "tun0")
		n.ip("-n", ns, "link", "set", "tun0", "up")
	}
	for i := range 2 {
		l.wg.Add(1)
		go l.carry(i, l.tuns[i], l.tuns[1-i])
	}
	return l
}

// openTun creates TUN device dev (IPv4/IPv6 packets, no header) in
// network namespace ns: on a thread of its own that enters ns and is
// never used again (the goroutine ends locked, so the runtime drops it).
func openTun(ns, dev string) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with us
		nsf, err := os.Open("/run/netns/" + ns)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer nsf.Close()
		if err := unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			ch <- result{err: err}
			return
		}
		ifr, err := unix.NewIfreq(dev)
		if err != nil {
			unix.Close(fd)
			ch <- result{err: err}
			return
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			ch <- result{err: fmt.Errorf("TUNSETIFF: %w", err)}
			return
		}
		ch <- result{f: os.NewFile(uintptr(fd), dev)} // non-blocking: in the poller, Close ends a Read
	}()
	r := <-ch
	return r.f, r.err
}

// set changes the impairment from now on (packets already delayed keep
// theirs).
func (l *chaosLink) set(imp impairment) { l.imp.Store(&imp) }

// setCut cuts the link (every packet dropped) or restores it.
func (l *chaosLink) setCut(on bool) { l.cut.Store(on) }

// carry hands on what arrives on from to to, until from is closed.
func (l *chaosLink) carry(side int, from, to *os.File) {
	defer l.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := from.Read(buf)
		if err != nil {
			if l.stopping.Load() {
				return
			}
			time.Sleep(5 * time.Millisecond) // e.g. EIO while the device is down: not a wait for an event
			continue
		}
		imp := l.imp.Load()
		drop := l.cut.Load() || rand.Float64() < imp.Loss
		if syn, ack, port := tcpSyn(buf[:n]); syn {
			l.mu.Lock()
			l.syns = append(l.syns, synEvent{at: time.Now(), from: side, ack: ack, dropped: drop, srcPort: port})
			l.mu.Unlock()
		}
		if drop {
			l.dropped.Add(1)
			continue
		}
		copies := 1
		if rand.Float64() < imp.Duplicate {
			copies = 2
		}
		for range copies {
			pkt := append([]byte(nil), buf[:n]...)
			d := imp.Delay
			if imp.Jitter > 0 {
				d += time.Duration(rand.Int64N(int64(2*imp.Jitter+1))) - imp.Jitter
			}
			if rand.Float64() < imp.Reorder || d <= 0 {
				l.send(to, pkt)
				continue
			}
			time.AfterFunc(d, func() { l.send(to, pkt) })
		}
	}
}

func (l *chaosLink) send(to *os.File, pkt []byte) {
	if l.cut.Load() { // cut while it waited
		l.dropped.Add(1)
		return
	}
	if _, err := to.Write(pkt); err == nil {
		l.carried.Add(1)
	}
}

func (l *chaosLink) stop() {
	l.stopping.Store(true)
	for _, f := range l.tuns {
		if f != nil {
			_ = f.Close()
		}
	}
	l.wg.Wait()
}
