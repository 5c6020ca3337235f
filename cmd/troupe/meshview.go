package main

import (
	"context"
	"sync"
	"time"
)

// The mesh view: what the web page (-ui), 'troupe top' and the HTTP API
// show. A meshHub samples the node once per viewEvery; each sample carries
// counters and the rates since the sample before (withRates, a pure
// function of two samples).

// viewEvery is how often the hub samples the node.
const viewEvery = time.Second

// meshView is one sample of the node and of the peers it is connected to.
type meshView struct {
	Time time.Time `json:"time"`
	Self idResult  `json:"self"`
	// Actors and Groups are this node's (public names only).
	Actors []string   `json:"actors"`
	Groups []string   `json:"groups"`
	Peers  []viewPeer `json:"peers"`
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
}

// sampleView takes a sample of the daemon's node, without rates.
func (d *runningDaemon) sampleView(now time.Time) meshView {
	st := d.node.Stats()
	v := meshView{
		Time: now, Self: d.id(), Actors: d.node.System().Names(), Groups: d.node.System().Groups(),
		Sent: st.Sent, Received: st.Received, DeadLetters: d.node.System().DeadLetters(),
		Peers: []viewPeer{},
	}
	traffic := map[string]int{}
	stats := d.node.PeerStats()
	for i, p := range stats {
		traffic[p.Peer.String()] = i
	}
	for _, p := range d.peers() {
		vp := viewPeer{peerInfo: p}
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

// meshHub samples the node every viewEvery and hands the latest sample to
// whoever asks; watchers wait on changed, which each sample closes and
// replaces. One goroutine, started by run.
type meshHub struct {
	sample func(time.Time) meshView
	mu     sync.Mutex    // guards the fields below
	cur    meshView      // the latest sample, with rates
	ok     bool          // cur holds a sample
	change chan struct{} // closed at the next sample
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
		h.tick(time.Now())
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				h.tick(now)
			}
		}
	}()
	return func() { close(quit); <-done }
}

func (h *meshHub) tick(now time.Time) {
	v := h.sample(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ok {
		v = withRates(h.cur, v)
	}
	h.cur, h.ok = v, true
	close(h.change)
	h.change = make(chan struct{})
}

// latest returns the latest sample (ok false before the first) and a
// channel closed when the next one is taken.
func (h *meshHub) latest() (v meshView, ok bool, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur, h.ok, h.change
}

// next waits for a sample newer than the one taken at after (any, when
// after is zero), or for ctx to end.
func (h *meshHub) next(ctx context.Context, after time.Time) (meshView, error) {
	for {
		v, ok, changed := h.latest()
		if ok && v.Time.After(after) {
			return v, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return meshView{}, ctx.Err()
		}
	}
}
