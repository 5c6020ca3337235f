package meshview

import (
	"context"
	"sync"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

// The mesh view: what the web page (-ui), 'troupe top' and the HTTP API
// show. A Hub samples the node once per Every; each sample carries
// counters and the rates since the sample before (WithRates, a pure
// function of two samples).

// Every is how often the hub samples the node.
const Every = time.Second

// MaxNames caps the actor and group names the view lists per peer
// (and for this node): other peers choose them, and each sample carries
// them to every watcher once a second.
const MaxNames = 64

// View is one sample of the node and of the peers it is connected to.
type View struct {
	Seq  uint64           `json:"seq"` // counts the samples of this daemon from 1
	Time time.Time        `json:"time"`
	Self control.IDResult `json:"self"`
	// Actors and Groups are this node's (public names only, at most
	// MaxNames each; More* count the rest).
	Actors     []string `json:"actors"`
	Groups     []string `json:"groups"`
	MoreActors int      `json:"more_actors,omitempty"`
	MoreGroups int      `json:"more_groups,omitempty"`
	Peers      []Peer   `json:"peers"`
	// Totals over every peer since the daemon started, and their rates.
	Sent           uint64  `json:"sent"`
	Received       uint64  `json:"received"`
	DeadLetters    uint64  `json:"dead_letters"`
	SentRate       float64 `json:"sent_rate"`
	ReceivedRate   float64 `json:"received_rate"`
	DeadLetterRate float64 `json:"dead_letter_rate"`
	// Budgets is what other peers hold here of the node-wide bounds
	// (docs/trust.md).
	Budgets Budgets `json:"budgets"`
}

// Budgets is the state of the node-wide bounds that other peers share:
// what stream readers hold for unfinished frames and large messages,
// and the monitors and links of other peers' actors.
type Budgets struct {
	ReaderBytes   int64  `json:"reader_bytes"`
	ReaderStreams int    `json:"reader_streams"` // streams holding reader memory
	ReaderPeers   int    `json:"reader_peers"`
	ReaderAddrs   int    `json:"reader_addresses"` // source addresses holding reader memory
	ReaderRefused uint64 `json:"reader_refused"`   // reservations refused since the daemon started
	RemoteWatches int    `json:"remote_watches"`
}

// Peer is one connected peer: what 'troupe peers' says of it, plus
// its traffic (messages since it connected, and per second).
type Peer struct {
	control.PeerInfo
	Sent         uint64  `json:"sent"`
	Received     uint64  `json:"received"`
	SentRate     float64 `json:"sent_rate"`
	ReceivedRate float64 `json:"received_rate"`
	Queued       int     `json:"queued"`     // messages waiting to be written to it
	HeldBytes    int64   `json:"held_bytes"` // bytes of its messages our actors hold
	// MoreActors and MoreGroups count the names beyond MaxNames.
	MoreActors int `json:"more_actors,omitempty"`
	MoreGroups int `json:"more_groups,omitempty"`
}

// CapNames returns names cut to MaxNames and how many it left out;
// never nil, so that the JSON says [] for none, never null.
func CapNames(names []string) ([]string, int) {
	if names == nil {
		return []string{}, 0
	}
	if len(names) <= MaxNames {
		return names, 0
	}
	return names[:MaxNames:MaxNames], len(names) - MaxNames
}

// WithRates returns cur with its rates: the counters' growth per second
// since prev. A counter that went down (a peer that reconnected) counts
// from zero; a peer new since prev too.
func WithRates(prev, cur View) View {
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
	before := make(map[string]Peer, len(prev.Peers))
	for _, p := range prev.Peers {
		before[p.ID] = p
	}
	peers := make([]Peer, len(cur.Peers))
	for i, p := range cur.Peers {
		was := before[p.ID] // zero when new
		p.SentRate, p.ReceivedRate = rate(was.Sent, p.Sent), rate(was.Received, p.Received)
		peers[i] = p
	}
	cur.Peers = peers
	return cur
}

// Hub samples the node every Every and hands the latest sample
// (and its JSON, encoded once for all watchers, on the first request) to
// whoever asks; watchers wait on changed, which each sample closes and
// replaces. One goroutine, started by start.
type Hub struct {
	sample func(time.Time) View
	mu     sync.Mutex    // guards the fields below
	cur    *hubSample    // the latest sample; nil before the first
	change chan struct{} // closed at the next sample
}

// hubSample is one sample, with rates, and its JSON once asked for.
type hubSample struct {
	v    View
	once sync.Once
	json []byte
	err  error
}

// encoded returns the sample as JSON, encoding it on the first call.
func (s *hubSample) encoded() ([]byte, error) {
	s.once.Do(func() { s.json, s.err = cli.MarshalJSON(s.v) })
	return s.json, s.err
}

func NewHub(sample func(time.Time) View) *Hub {
	return &Hub{sample: sample, change: make(chan struct{})}
}

// start samples now and then every Every until stop, which waits.
func (h *Hub) Start() (stop func()) {
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(Every)
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
func (h *Hub) tick() {
	v := h.sample(time.Now())
	h.mu.Lock()
	prev := h.cur
	h.mu.Unlock()
	if prev != nil {
		v = WithRates(prev.v, v)
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
func (h *Hub) latest() (*hubSample, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur, h.change
}

// next waits for a sample other than the one numbered after (any, when
// after is zero; the latest at once, for a watcher of a daemon that
// restarted and numbers from 1 again), or for ctx to end. It returns the
// sample and its JSON.
func (h *Hub) Next(ctx context.Context, after uint64) (View, []byte, error) {
	for {
		cur, changed := h.latest()
		if cur != nil && cur.v.Seq != after {
			b, err := cur.encoded()
			return cur.v, b, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return View{}, nil, ctx.Err()
		}
	}
}
