package main

import (
	"context"
	"sync"
	"time"

	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// The mesh view: what the web page (-ui), 'troupe top' and the HTTP API
// show. A meshHub samples the node once per viewEvery; each sample carries
// counters and the rates since the sample before (withRates, a pure
// function of two samples).

// viewEvery is how often the hub samples the node.
const viewEvery = time.Second

// viewMaxNames caps the actor and group names the view lists per peer
// (and for this node): other peers choose them, and each sample carries
// them to every watcher once a second.
const viewMaxNames = 64

// meshView is one sample of the node and of the peers it is connected to.
type meshView struct {
	Seq  uint64    `json:"seq"` // counts the samples of this daemon from 1
	Time time.Time `json:"time"`
	Self idResult  `json:"self"`
	// Actors and Groups are this node's (public names only, at most
	// viewMaxNames each; More* count the rest).
	Actors     []string   `json:"actors"`
	Groups     []string   `json:"groups"`
	MoreActors int        `json:"more_actors,omitempty"`
	MoreGroups int        `json:"more_groups,omitempty"`
	Peers      []viewPeer `json:"peers"`
	// Totals over every peer since the daemon started, and their rates.
	Sent           uint64  `json:"sent"`
	Received       uint64  `json:"received"`
	DeadLetters    uint64  `json:"dead_letters"`
	SentRate       float64 `json:"sent_rate"`
	ReceivedRate   float64 `json:"received_rate"`
	DeadLetterRate float64 `json:"dead_letter_rate"`
}

// viewPeer is one connected peer: what 'troupe peers' says of it, plus
// its traffic (messages since it connected, and per second).
type viewPeer struct {
	peerInfo
	Sent         uint64  `json:"sent"`
	Received     uint64  `json:"received"`
	SentRate     float64 `json:"sent_rate"`
	ReceivedRate float64 `json:"received_rate"`
	Queued       int     `json:"queued"`     // messages waiting to be written to it
	HeldBytes    int64   `json:"held_bytes"` // bytes of its messages our actors hold
	// MoreActors and MoreGroups count the names beyond viewMaxNames.
	MoreActors int `json:"more_actors,omitempty"`
	MoreGroups int `json:"more_groups,omitempty"`
}

// capNames returns names cut to viewMaxNames and how many it left out;
// never nil, so that the JSON says [] for none, never null.
func capNames(names []string) ([]string, int) {
	if names == nil {
		return []string{}, 0
	}
	if len(names) <= viewMaxNames {
		return names, 0
	}
	return names[:viewMaxNames:viewMaxNames], len(names) - viewMaxNames
}

// sampleView takes a sample of the daemon's node, without rates.
func (d *runningDaemon) sampleView(now time.Time) meshView {
	st := d.node.Stats()
	v := meshView{
		Time: now, Self: d.id(),
		Sent: st.Sent, Received: st.Received, DeadLetters: d.node.System().DeadLetters(),
		Peers: []viewPeer{},
	}
	v.Actors, v.MoreActors = capNames(d.node.System().Names())
	v.Groups, v.MoreGroups = capNames(group.Names(d.node.System()))
	traffic := map[string]int{}
	stats := d.node.PeerStats()
	for i, p := range stats {
		traffic[p.Peer.String()] = i
	}
	for _, p := range d.peers() {
		vp := viewPeer{peerInfo: p}
		vp.Actors, vp.MoreActors = capNames(p.Actors)
		vp.Groups, vp.MoreGroups = capNames(p.Groups)
		if i, ok := traffic[p.ID]; ok {
			s := stats[i]
			vp.Sent, vp.Received, vp.Queued, vp.HeldBytes = s.Sent, s.Received, s.Queued, s.Held
		}
		v.Peers = append(v.Peers, vp)
	}
	return v
}

// withRates returns cur with its rates: the counters' growth per second
// since prev. A counter that went down (a peer that reconnected) counts
// from zero; a peer new since prev too.
func withRates(prev, cur meshView) meshView {
	dt := cur.Time.Sub(prev.Time).Seconds()
	if dt <= 0 || prev.Time.IsZero() {
		return cur
	}
	rate := func(was, now uint64) float64 {
		if now < was {
			was = 0
		}
		return float64(now-was) / dt
	}
	cur.SentRate = rate(prev.Sent, cur.Sent)
	cur.ReceivedRate = rate(prev.Received, cur.Received)
	cur.DeadLetterRate = rate(prev.DeadLetters, cur.DeadLetters)
	before := make(map[string]viewPeer, len(prev.Peers))
	for _, p := range prev.Peers {
		before[p.ID] = p
	}
	peers := make([]viewPeer, len(cur.Peers))
	for i, p := range cur.Peers {
		was := before[p.ID] // zero when new
		p.SentRate, p.ReceivedRate = rate(was.Sent, p.Sent), rate(was.Received, p.Received)
		peers[i] = p
	}
	cur.Peers = peers
	return cur
}

// meshHub samples the node every viewEvery and hands the latest sample
// (and its JSON, encoded once for all watchers, on the first request) to
// whoever asks; watchers wait on changed, which each sample closes and
// replaces. One goroutine, started by start.
type meshHub struct {
	sample func(time.Time) meshView
	mu     sync.Mutex    // guards the fields below
	cur    *hubSample    // the latest sample; nil before the first
	change chan struct{} // closed at the next sample
}

// hubSample is one sample, with rates, and its JSON once asked for.
type hubSample struct {
	v    meshView
	once sync.Once
	json []byte
	err  error
}

// encoded returns the sample as JSON, encoding it on the first call.
func (s *hubSample) encoded() ([]byte, error) {
	s.once.Do(func() { s.json, s.err = cli.MarshalJSON(s.v) })
	return s.json, s.err
}

func newMeshHub(sample func(time.Time) meshView) *meshHub {
	return &meshHub{sample: sample, change: make(chan struct{})}
}

// start samples now and then every viewEvery until stop, which waits.
func (h *meshHub) start() (stop func()) {
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(viewEvery)
		defer t.Stop()
		h.tick()
		for {
			select {
			case <-quit:
				return
			case <-t.C: // the ticker's time may be late: rates use the time sampled
				h.tick()
			}
		}
	}()
	return func() { close(quit); <-done }
}

// tick takes a sample. Only the hub's goroutine calls it, so cur changes
// only here.
func (h *meshHub) tick() {
	v := h.sample(time.Now())
	h.mu.Lock()
	prev := h.cur
	h.mu.Unlock()
	if prev != nil {
		v = withRates(prev.v, v)
		v.Seq = prev.v.Seq + 1
	} else {
		v.Seq = 1
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur = &hubSample{v: v}
	close(h.change)
	h.change = make(chan struct{})
}

// latest returns the latest sample (nil before the first) and a channel
// closed when the next one is taken.
func (h *meshHub) latest() (*hubSample, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur, h.change
}

// next waits for a sample other than the one numbered after (any, when
// after is zero; the latest at once, for a watcher of a daemon that
// restarted and numbers from 1 again), or for ctx to end. It returns the
// sample and its JSON.
func (h *meshHub) next(ctx context.Context, after uint64) (meshView, []byte, error) {
	for {
		cur, changed := h.latest()
		if cur != nil && cur.v.Seq != after {
			b, err := cur.encoded()
			return cur.v, b, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return meshView{}, nil, ctx.Err()
		}
	}
}
