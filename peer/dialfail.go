package peer

import (
	"cmp"
	"slices"
	"sync"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// DialFailure is a peer that discovery (mDNS, the DHT) found and that
// could not be dialed.
type DialFailure struct {
	Peer  libp2ppeer.ID
	Addrs []string // the addresses discovery gave
	Err   string   // why the last dial failed
	At    time.Time
}

// maxDialFailures is how many peers DialFailures remembers: the latest.
const maxDialFailures = 32

// dialFailures remembers the latest failed dials of discovered peers;
// a peer leaves once it connects. Safe for concurrent use.
type dialFailures struct {
	mu  sync.Mutex
	m   map[libp2ppeer.ID]dialFailure
	seq uint64 // numbers the failures, to find the oldest
}

type dialFailure struct {
	DialFailure
	seq uint64
}

func (d *dialFailures) failed(ai libp2ppeer.AddrInfo, err error) {
	f := DialFailure{Peer: ai.ID, Err: err.Error(), At: time.Now()}
	for _, a := range ai.Addrs {
		f.Addrs = append(f.Addrs, a.String())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[libp2ppeer.ID]dialFailure)
	}
	if _, ok := d.m[ai.ID]; !ok && len(d.m) >= maxDialFailures {
		var oldest libp2ppeer.ID
		for id, o := range d.m {
			if oldest == "" || o.seq < d.m[oldest].seq {
				oldest = id
			}
		}
		delete(d.m, oldest)
	}
	d.seq++
	d.m[ai.ID] = dialFailure{f, d.seq}
}

func (d *dialFailures) connected(id libp2ppeer.ID) {
	d.mu.Lock()
	delete(d.m, id)
	d.mu.Unlock()
}

// DialFailures returns the peers discovery found and could not dial (the
// latest 32, newest first), each with its last error; a peer leaves the
// list once it connects. 'troupe doctor' shows them.
func (n *Node) DialFailures() []DialFailure {
	n.dialFails.mu.Lock()
	all := make([]dialFailure, 0, len(n.dialFails.m))
	for _, f := range n.dialFails.m {
		all = append(all, f)
	}
	n.dialFails.mu.Unlock()
	slices.SortFunc(all, func(a, b dialFailure) int { return cmp.Compare(b.seq, a.seq) })
	out := make([]DialFailure, len(all))
	for i, f := range all {
		out[i] = f.DialFailure
	}
	return out
}
