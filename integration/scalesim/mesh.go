package scalesim

import (
	"cmp"
	"slices"
	"strconv"

	kb "github.com/libp2p/go-libp2p-kbucket"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/peer"
)

// maxProviders is discovery's bound on the rendezvous's provider
// records per DHT server (discovery/dht_store.go).
const maxProviders = 4096

// provideNames provides every peer's name (svc-<i>, as the scale
// benchmarks name their echo actors): each record goes to the peers a
// lookup of its key ends at.
func (s *sim) provideNames() {
	for i := range s.cfg.N {
		key, err := nameKey("svc-" + strconv.Itoa(i))
		if err != nil {
			panic(err) // a constant mesh name: NameKey does not fail
		}
		_, _, _, nearest := s.walk(i, kb.ConvertKey(key), nil)
		s.names[key] = nearest
	}
	// The rendezvous key's bucket-size nearest peers hold every peer's
	// record, up to discovery's bound.
	s.rdv = min(s.cfg.N, maxProviders)
}

// formMeshes builds each topic's GossipSub mesh over the connections:
// every peer grafts up to D of its connected peers, a graft is accepted,
// and a peer left with more than Dhi prunes back to D (the heartbeat's
// rule), never below what others grafted on it after.
func (s *sim) formMeshes() {
	s.mesh = make([][]map[int]bool, s.cfg.Topics)
	for t := range s.mesh {
		m := make([]map[int]bool, s.cfg.N)
		for i := range m {
			m[i] = map[int]bool{}
		}
		for _, i := range s.r.Perm(s.cfg.N) {
			peers := sortedKeys(s.conns[i])
			s.r.Shuffle(len(peers), func(a, b int) { peers[a], peers[b] = peers[b], peers[a] })
			for _, j := range peers {
				if len(m[i]) >= meshD {
					break
				}
				m[i][j], m[j][i] = true, true
			}
		}
		for _, i := range s.r.Perm(s.cfg.N) {
			if len(m[i]) <= meshDhi {
				continue
			}
			peers := sortedKeys(m[i])
			s.r.Shuffle(len(peers), func(a, b int) { peers[a], peers[b] = peers[b], peers[a] })
			for _, j := range peers[:len(peers)-meshD] {
				delete(m[i], j)
				delete(m[j], i)
			}
		}
		s.mesh[t] = m
	}
}

func sortedKeys(m map[int]bool) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// protected reports whether i keeps j whatever its budget: a GossipSub
// mesh edge of any topic.
func (s *sim) protected(i, j int) bool {
	for t := range s.mesh {
		if s.mesh[t][i][j] {
			return true
		}
	}
	return false
}

// value is what kad-dht's tags make j worth to i: 10 in the two widest
// buckets (common prefix 0 or 1, the host's budgetConnMgr turns that
// protection into a value), 5 in the others, 0 outside the table.
func (s *sim) value(i, j int) int {
	if s.rts[i].Find(s.ids[j]) == "" {
		return 0
	}
	if kb.CommonPrefixLen(s.keys[i], s.keys[j]) <= 1 {
		return 10
	}
	return 5
}

// trim runs every peer's guard once past the grace period, in random
// order: a peer with High or more connections disconnects unprotected
// peers, least value first, until Low are left. A disconnection counts
// at both ends.
func (s *sim) trim() {
	for _, i := range s.r.Perm(s.cfg.N) {
		if len(s.conns[i]) < peer.DefaultConnsHigh {
			continue
		}
		type cand struct{ j, value int }
		var may []cand
		for _, j := range sortedKeys(s.conns[i]) {
			if !s.protected(i, j) {
				may = append(may, cand{j, s.value(i, j)})
			}
		}
		slices.SortStableFunc(may, func(a, b cand) int { return cmp.Compare(a.value, b.value) })
		for _, c := range may[:min(len(may), max(0, len(s.conns[i])-peer.DefaultConnsLow))] {
			delete(s.conns[i], c.j)
			delete(s.conns[c.j], i)
		}
	}
}

func (s *sim) figures() (Figures, error) {
	f := Figures{N: s.cfg.N, RendezvousRecords: s.rdv, AdsHeld: s.cfg.N - 1}
	var rt, conns, edges []float64
	held := make([]float64, s.cfg.N)
	holds := make([]map[string]bool, s.cfg.N)
	for key, ps := range s.names {
		for _, p := range ps {
			held[p]++
			if holds[p] == nil {
				holds[p] = map[string]bool{}
			}
			holds[p][key] = true
		}
	}
	for i := range s.cfg.N {
		rt = append(rt, float64(s.rts[i].Size()))
		conns = append(conns, float64(len(s.conns[i])))
		e := 0
		for t := range s.mesh {
			e += len(s.mesh[t][i])
		}
		edges = append(edges, float64(e))
	}
	// The name lookups after the mesh formed: a random asker, a random
	// other peer's name, the walk until a peer that holds its record.
	var hops, queries []float64
	found := 0
	for range s.cfg.Lookups {
		from := s.r.IntN(s.cfg.N)
		to := s.r.IntN(s.cfg.N - 1)
		if to >= from {
			to++
		}
		key, err := nameKey("svc-" + strconv.Itoa(to))
		if err != nil {
			return Figures{}, err
		}
		r, q, ok, _ := s.walk(from, kb.ConvertKey(key), func(j int) bool { return holds[j][key] })
		hops, queries = append(hops, float64(r)), append(queries, float64(q))
		if ok {
			found++
		}
	}
	// The lookups' own connections are not counted: they are new, within
	// their grace period, and the next sweep trims them.
	f.RoutingTable, f.Conns, f.MeshEdges, f.NameRecords = dist(rt), dist(conns), dist(edges), dist(held)
	f.Hops, f.Queries = dist(hops), dist(queries)
	f.Found = float64(found) / float64(s.cfg.Lookups)
	f.Background = Model(s.cfg.N, int(f.Conns.Median), s.cfg.AdTTL)
	if s.cfg.N >= discovery.DefaultLookupAbove { // a narrow directory: the connected peers'
		f.AdsHeld = int(f.Conns.Median)
	}
	return f, nil
}
