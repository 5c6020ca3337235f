// Package scalesim simulates the discovery, directory and connection
// logic of a Troupe mesh of N peers without hosts: no sockets, no
// goroutines per peer, so that 10,000 peers fit a laptop (issue 29
// item 5; docs/scale.md, "Simulation").
//
// What is the project's or libp2p's own code, and what is a model:
//
//   - Routing tables are kad-dht's (go-libp2p-kbucket's RoutingTable,
//     bucket size amino.DefaultBucketSize), filled as kad-dht fills
//     them: a peer joins through the bootstrap peer, looks itself up,
//     then refreshes one random key per bucket; every peer queried adds
//     the querier and the querier adds it.
//   - Lookups are kad-dht's iterative walk in rounds: amino.DefaultConcurrency
//     (α) queries per round to the nearest peers not yet queried, each
//     answering its bucket-size nearest; the walk ends when the
//     amino.DefaultResiliency (β) nearest peers known were all queried,
//     or, for a name, at the first peer that holds a provider record of
//     it. A round is one hop on the wire.
//   - Name records go where a provide puts them: to the bucket-size
//     peers a lookup of the name's key (discovery.NameKey) ends at.
//   - Connections follow the budget's rule (peer.Connections): a peer
//     dials the peers it finds until it holds peer.DefaultConnsLow, the
//     DHT's queries connect it to what they query, GossipSub's meshes
//     (D = 6, at most 12 per topic) are protected, and a peer holding
//     peer.DefaultConnsHigh or more disconnects unprotected peers, those
//     outside its routing table first, then its other buckets', then
//     the two widest buckets' (kad-dht's tags), until Low are left. The
//     guard's toTrim is unexported in package peer, so this is the same
//     rule written again, not that function.
//   - Background bytes are the model of docs/scale.md (Background) fed
//     with the simulated connections: the simulation sends no bytes.
package scalesim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p-kad-dht/amino"
	kb "github.com/libp2p/go-libp2p-kbucket"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	pstore "github.com/libp2p/go-libp2p/p2p/host/peerstore"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/peer"
)

// Config is one simulated mesh.
type Config struct {
	N       int    // peers
	Seed    uint64 // of the peer IDs and every random choice
	Lookups int    // name lookups sampled (default 200)
	Topics  int    // GossipSub topics every peer joins (default 2: the ads topic and one group)
	// AdTTL is the advertisements' TTL (default 90 s); they are
	// republished every third of it.
	AdTTL time.Duration
	// NoRefresh skips the bucket refresh after a peer's self lookup
	// (quicker; tables come out thinner than kad-dht's).
	NoRefresh bool
}

// GossipSub's mesh degree (go-libp2p-pubsub's defaults): D, the most
// before a prune (Dhi).
const (
	meshD   = 6
	meshDhi = 12
)

// Dist is a distribution over peers or lookups.
type Dist struct{ Median, P99, Max float64 }

func dist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Dist{Median: s[len(s)/2], P99: s[min(len(s)-1, len(s)*99/100)], Max: s[len(s)-1]}
}

// Figures are what a simulated mesh reports, per peer or per lookup.
type Figures struct {
	N            int
	RoutingTable Dist // entries of a peer's routing table
	Hops         Dist // rounds of a name lookup until the first record
	Queries      Dist // peers a name lookup queried
	Found        float64
	Conns        Dist // connections per peer at rest
	MeshEdges    Dist // GossipSub mesh peers per peer, all topics (protected)
	NameRecords  Dist // name provider records a peer's DHT server holds
	// RendezvousRecords is what each of the bucket-size peers nearest
	// the rendezvous key holds: every peer's record, up to discovery's
	// bound of 4,096.
	RendezvousRecords int
	AdsHeld           int        // advertisements a peer holds: all others' below the lookup threshold, its connected peers' (median) above
	Background        Background // bytes per second per peer, the model fed with Conns.Median
}

type sim struct {
	cfg   Config
	r     *rand.Rand
	ids   []libp2ppeer.ID
	keys  []kb.ID
	index map[libp2ppeer.ID]int
	rts   []*kb.RoutingTable
	conns []map[int]bool
	mesh  [][]map[int]bool // [topic][peer] -> mesh peers
	names map[string][]int // DHT key -> peers holding its provider records
	rdv   int              // rendezvous records per holder
}

// Run simulates cfg's mesh and returns its figures.
func Run(cfg Config) (Figures, error) {
	if cfg.N < 2 {
		return Figures{}, fmt.Errorf("scalesim: %d peers: need at least 2", cfg.N)
	}
	if cfg.Lookups == 0 {
		cfg.Lookups = 200
	}
	if cfg.Topics == 0 {
		cfg.Topics = 2
	}
	if cfg.AdTTL == 0 {
		cfg.AdTTL = 90 * time.Second
	}
	s := &sim{cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.N))), index: map[libp2ppeer.ID]int{}, names: map[string][]int{}}
	metrics := pstore.NewMetrics()
	for i := range cfg.N {
		var raw [32]byte
		for j := range raw {
			raw[j] = byte(s.r.Uint32())
		}
		id := libp2ppeer.ID(raw[:]) // kbucket hashes the ID: any bytes will do
		rt, err := kb.NewRoutingTable(amino.DefaultBucketSize, kb.ConvertPeerID(id), time.Hour, metrics, time.Hour, nil)
		if err != nil {
			return Figures{}, err
		}
		s.ids, s.keys, s.rts = append(s.ids, id), append(s.keys, kb.ConvertPeerID(id)), append(s.rts, rt)
		s.index[id] = i
		s.conns = append(s.conns, map[int]bool{})
	}
	defer func() {
		for _, rt := range s.rts {
			_ = rt.Close()
		}
	}()
	for i := 1; i < cfg.N; i++ {
		if err := s.join(i); err != nil {
			return Figures{}, err
		}
	}
	s.provideNames()
	s.formMeshes()
	s.trim()
	return s.figures()
}

// join has peer i join through peer 0, as a node given one bootstrap
// peer does, and dial found peers up to the budget's low mark.
func (s *sim) join(i int) error {
	s.meet(i, 0)
	s.walk(i, s.keys[i], nil)
	if !s.cfg.NoRefresh {
		top := s.maxCpl(i)
		for cpl := uint(0); cpl < 16 && int(cpl) <= top; cpl++ {
			p, err := s.rts[i].GenRandPeerID(cpl)
			if err != nil {
				return err
			}
			s.walk(i, kb.ConvertPeerID(p), nil)
		}
	}
	// The rendezvous's providers are the peers that joined before, in
	// random order (discovery dials a shuffled batch); dials stop at Low.
	for _, j := range s.r.Perm(i) {
		if len(s.conns[i]) >= peer.DefaultConnsLow {
			break
		}
		s.connect(i, j)
	}
	return nil
}

// maxCpl is the longest common prefix of i's ID with a peer of its
// table: the buckets kad-dht refreshes.
func (s *sim) maxCpl(i int) int {
	most := 0
	for _, p := range s.rts[i].ListPeers() {
		most = max(most, kb.CommonPrefixLen(s.keys[i], s.keys[s.index[p]]))
	}
	return most
}

// meet is one query between a and b: a connection, and each in the
// other's routing table.
func (s *sim) meet(a, b int) {
	_, _ = s.rts[a].TryAddPeer(s.ids[b], true, true)
	_, _ = s.rts[b].TryAddPeer(s.ids[a], true, true)
	s.connect(a, b)
}

func (s *sim) connect(a, b int) {
	if a != b {
		s.conns[a][b], s.conns[b][a] = true, true
	}
}

// walk is from's iterative lookup of key; stop, if set, ends it at the
// first peer it returns true for. It returns the rounds, the peers
// queried and whether stop ended it.
func (s *sim) walk(from int, key kb.ID, stop func(int) bool) (rounds, queries int, found bool, nearest []int) {
	alpha, beta, k := amino.DefaultConcurrency, amino.DefaultResiliency, amino.DefaultBucketSize
	known := map[int]bool{from: true}
	queried := map[int]bool{}
	type cand struct {
		j    int
		dist kb.ID
	}
	var cands []cand
	add := func(ids []libp2ppeer.ID) {
		for _, id := range ids {
			if j, ok := s.index[id]; ok && !known[j] {
				known[j] = true
				cands = append(cands, cand{j, kb.Xor(s.keys[j], key)})
			}
		}
	}
	add(s.rts[from].NearestPeers(key, k))
	for {
		slices.SortFunc(cands, func(a, b cand) int { return bytes.Compare(a.dist, b.dist) })
		var next []int
		done := true
		for n, c := range cands {
			if j := c.j; !queried[j] {
				if n < beta {
					done = false
				}
				if len(next) < alpha {
					next = append(next, j)
				}
			}
		}
		if done || len(next) == 0 {
			break
		}
		rounds++
		for _, j := range next {
			queried[j] = true
			queries++
			s.meet(from, j)
			if stop != nil && stop(j) {
				found = true
			}
			add(s.rts[j].NearestPeers(key, k))
		}
		if found {
			break
		}
	}
	for _, c := range cands {
		if queried[c.j] && len(nearest) < k {
			nearest = append(nearest, c.j)
		}
	}
	return rounds, queries, found, nearest
}

// nameKey is the DHT key of a name, as discovery provides it.
func nameKey(name string) (string, error) {
	c, err := discovery.NameKey("scale", name)
	if err != nil {
		return "", err
	}
	return string(c.Hash()), nil
}
