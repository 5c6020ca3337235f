package discovery

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// scopePeer is a host with GossipSub and a directory whose judgement of
// the mesh's size the test sets.
type scopePeer struct {
	h     host.Host
	ps    *pubsub.PubSub
	d     *Directory
	large atomic.Bool
}

func newScopePeer(t *testing.T) *scopePeer {
	t.Helper()
	p := &scopePeer{h: testhost.NewHost(t)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var err error
	if p.ps, err = pubsub.NewGossipSub(ctx, p.h); err != nil {
		t.Fatal(err)
	}
	source := func() ([]string, []string) { return []string{"svc-" + p.h.ID().String()[:8]}, nil }
	p.d, err = StartAds(p.h, p.ps, source, WithMesh("scope"), WithAdTick(50*time.Millisecond), WithAdTTL(3*time.Second),
		WithLargeMesh(p.large.Load))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.d.Close(context.Background()) })
	return p
}

func (p *scopePeer) connect(t *testing.T, o *scopePeer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.h.Connect(ctx, libp2ppeer.AddrInfo{ID: o.h.ID(), Addrs: o.h.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// seq is the sequence number of the advertisement p holds of o (0: none).
func (p *scopePeer) seq(o *scopePeer) uint64 {
	if ad := p.d.Ad(o.h.ID()); ad != nil {
		return ad.Seq
	}
	return 0
}

// In a mesh judged large a directory leaves the advertisement topic,
// drops the advertisements of the peers it is not connected to, refuses
// them second-hand, and keeps those of its connected peers fresh from
// the peers themselves (no gossip reaches it, and its own reaches its
// neighbours by the exchanges only); judged small again, it joins the
// topic and learns the whole mesh again. a is connected to b only, b to
// a and c.
func TestNarrowDirectoryLeavesAndRejoinsTopic(t *testing.T) {
	a, b, c := newScopePeer(t), newScopePeer(t), newScopePeer(t)
	a.connect(t, b)
	b.connect(t, c)
	topic := AdsTopic("scope")
	onTopic := func(p, of *scopePeer) bool { return slices.Contains(p.ps.ListPeers(topic), of.h.ID()) }
	testutil.Eventually(t, 20*time.Second, "a holds b's and c's advertisements, on the topic", func() bool {
		return a.seq(b) > 0 && a.seq(c) > 0 && onTopic(b, a)
	})

	a.large.Store(true)
	testutil.Eventually(t, 10*time.Second, "a off the topic, holding b's only", func() bool {
		return a.d.Narrow() && !onTopic(b, a) && a.seq(c) == 0 && a.seq(b) > 0
	})
	if st := a.d.Stats(); st.TopicLeft != 1 || st.Narrowed == 0 {
		t.Fatalf("stats %+v: want TopicLeft 1, Narrowed > 0", st)
	}
	// Past two TTLs (3 s) both ends still hold the other's, refreshed:
	// newer than what they held, and c's never came back through b.
	ab, ba, gossiped := a.seq(b), b.seq(a), a.d.Stats().Gossiped
	testutil.Eventually(t, 15*time.Second, "a and b refreshed each other's", func() bool {
		return a.seq(b) > ab+2 && b.seq(a) > ba+2
	})
	if a.seq(c) != 0 {
		t.Fatal("a narrow directory took c's advertisement second-hand")
	}
	if st := a.d.Stats(); st.Gossiped != gossiped || st.TopicJoined != 0 {
		t.Fatalf("stats %+v: want no gossip stored off the topic (%d before), no join", st, gossiped)
	}
	a.large.Store(false)
	testutil.Eventually(t, 20*time.Second, "a back on the topic, holding c's", func() bool {
		return !a.d.Narrow() && onTopic(b, a) && a.seq(c) > 0 && a.d.Stats().Gossiped > gossiped
	})
	if st := a.d.Stats(); st.TopicJoined != 1 {
		t.Fatalf("stats %+v: want TopicJoined 1", st)
	}
}

// A narrow directory does not verify, nor keep, an advertisement that
// reached it second-hand or from a peer it is not connected to: a
// hostile neighbour's relays cost it a decode, no signature check.
func TestNarrowDirectoryTakesFirstHandOnly(t *testing.T) {
	h, next := testhost.NewHost(t), testhost.NewHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, libp2ppeer.AddrInfo{ID: next.ID(), Addrs: next.Addrs()}); err != nil {
		t.Fatal(err)
	}
	d := &Directory{cfg: adsConfig{TTL: defaultTTL}, h: h, peers: make(map[libp2ppeer.ID]adEntry), pullNow: make(chan struct{}, 1)}
	d.narrow.Store(true)
	far := testhost.NewPeerID(t)
	for _, c := range []struct {
		what    string
		id, via libp2ppeer.ID
		want    bool
	}{
		{"a connected peer's, from itself", next.ID(), next.ID(), true},
		{"a connected peer's, relayed", next.ID(), far, false},
		{"an unconnected peer's, from itself", far, far, false},
		{"an unconnected peer's, relayed by a neighbour", far, next.ID(), false},
	} {
		ad := &Advertisement{Peer: []byte(c.id), Incarnation: 1, Seq: 1, TTLSeconds: 60}
		if got := d.fresh(c.id, ad, c.via); got != c.want {
			t.Errorf("%s: fresh %v, want %v", c.what, got, c.want)
		}
		if ok, _ := d.store(ad, []byte("signed"), time.Minute, c.via != c.id, c.via); ok != c.want {
			t.Errorf("%s: stored %v, want %v", c.what, ok, c.want)
		}
	}
}

// A narrow directory, off the topic, learns a restarted neighbour's new
// incarnation from the neighbour's own answer only: an exchange's
// advertisement of the answering peer itself replaces one of another
// incarnation, as gossip's does; a relayed one still does not.
func TestOwnAnswerReplacesAnotherIncarnation(t *testing.T) {
	h, next := testhost.NewHost(t), testhost.NewHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, libp2ppeer.AddrInfo{ID: next.ID(), Addrs: next.Addrs()}); err != nil {
		t.Fatal(err)
	}
	for _, narrow := range []bool{false, true} {
		d := &Directory{cfg: adsConfig{TTL: defaultTTL}, h: h, peers: make(map[libp2ppeer.ID]adEntry), pullNow: make(chan struct{}, 1)}
		d.narrow.Store(narrow)
		ad := func(inc uint64) *Advertisement {
			return &Advertisement{Peer: []byte(next.ID()), Incarnation: inc, Seq: 1, TTLSeconds: 60}
		}
		if ok, _ := d.store(ad(1), []byte("signed 1"), time.Minute, true, next.ID()); !ok {
			t.Fatalf("narrow %v: the first advertisement not stored", narrow)
		}
		if !narrow { // a relayer's of another incarnation: refused
			far := testhost.NewPeerID(t)
			if d.fresh(next.ID(), ad(3), far) {
				t.Fatal("a relayed advertisement of another incarnation is fresh")
			}
			if ok, _ := d.store(ad(3), []byte("signed 3"), time.Minute, true, far); ok {
				t.Fatal("a relayed advertisement of another incarnation replaced the held one")
			}
		}
		if !d.fresh(next.ID(), ad(2), next.ID()) {
			t.Errorf("narrow %v: the peer's own answer of a new incarnation is not fresh", narrow)
		}
		if ok, _ := d.store(ad(2), []byte("signed 2"), time.Minute, true, next.ID()); !ok {
			t.Errorf("narrow %v: the peer's own answer of a new incarnation not stored", narrow)
		}
		if got := d.Ad(next.ID()); got == nil || got.Incarnation != 2 {
			t.Errorf("narrow %v: holding %+v, want incarnation 2", narrow, got)
		}
	}
}
