package integration

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/group"
	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
	"github.com/troupe-mesh/troupe/peer"
)

// Peers advertise their public actors; the directory finds them, rejects
// forged and malformed advertisements, and forgets a peer that leaves or
// whose advertisement expires.
func TestAdvertisementsAndDirectory(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("adtest"), peer.WithGroups(true), peer.WithAdvertisements(50*time.Millisecond, 3*time.Second)}
	a, b, c := newNode(t, opts...), newNode(t, opts...), newNode(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []*peer.Node{b, c} {
		if err := n.Connect(ctx, *a.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	spawn(t, b, "alpha", echo)
	waitFor(t, func() bool { return len(a.Directory().Lookup("alpha")) == 1 })
	want, _ := peer.Ref(b.ID(), "alpha")
	if got := a.Directory().Lookup("alpha"); got[0] != want {
		t.Fatalf("directory: %v, want %v", got, want)
	}
	if ref, err := a.Whereis(ctx, "alpha"); err != nil || ref != want {
		t.Fatalf("whereis: %v %v", ref, err)
	}
	if _, err := a.Whereis(ctx, "nobody"); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("whereis nobody: %v", err)
	}

	// A raw peer publishes a forged advertisement (describing c, signed with
	// its own key), garbage, and then a valid one of its own with a 1 s TTL.
	raw := testhost.NewHost(t)
	psCtx, stopPS := context.WithCancel(ctx)
	defer stopPS()
	ps, err := pubsub.NewGossipSub(psCtx, raw)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join("/troupe/adtest/ads")
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Close()
	if err := raw.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return slices.Contains(ps.ListPeers("/troupe/adtest/ads"), a.ID()) })
	before := a.DirectoryRejected()
	forged, err := discovery.Sign(raw, &discovery.Advertisement{Peer: []byte(c.ID()), Actors: []string{"fake"}, TTLSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{forged, []byte("garbage")} {
		if err := topic.Publish(ctx, data); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return a.DirectoryRejected() >= before+2 })
	if refs := a.Directory().Lookup("fake"); len(refs) != 0 {
		t.Fatalf("forged advertisement accepted: %v", refs)
	}
	own, err := discovery.Sign(raw, &discovery.Advertisement{Peer: []byte(raw.ID()), Actors: []string{"short-lived"}, TTLSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := topic.Publish(ctx, own); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.Directory().Lookup("short-lived")) == 1 })
	if st := a.Directory().Stats(); st.Gossiped == 0 {
		t.Fatalf("an advertisement from the topic, not counted as gossiped: %+v", st)
	}
	waitFor(t, func() bool { return len(a.Directory().Lookup("short-lived")) == 0 }) // TTL lapsed
	if st := a.Directory().Stats(); st.Expired == 0 {
		t.Fatalf("an advertisement whose TTL lapsed, not counted as expired: %+v", st)
	}

	// b leaves: its advertisement goes with it.
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.Directory().Lookup("alpha")) == 0 })
}

// exchangeAd and exchangeResponse mirror the directory exchange's response
// (discovery.SyncProtocol) for a raw peer that speaks it by hand.
type exchangeAd struct {
	Data []byte `cbor:"1,keyasint"`
	TTL  uint32 `cbor:"2,keyasint"`
}

type exchangeResponse struct {
	Ads []exchangeAd `cbor:"1,keyasint,omitempty"`
}

type exchangeRequest struct {
	Own []byte `cbor:"2,keyasint,omitempty"`
}

// A newly connected peer is told the directory in one exchange, before
// gossip: a raw peer asks a node and gets the advertisements of both the
// node and the node's other peer. Bad exchanges, in either direction, are
// dropped and counted, and store nothing.
func TestDirectoryExchange(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("xtest"), peer.WithGroups(true), peer.WithAdvertisements(50*time.Millisecond, 30*time.Second)}
	a, b := newNode(t, opts...), newNode(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spawn(t, b, "beta", echo)
	if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.Directory().Lookup("beta")) == 1 })

	raw := testhost.NewHost(t)
	if err := raw.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	proto := discovery.SyncProtocol("xtest")
	ask := func(req []byte) ([]byte, error) {
		s, err := raw.NewStream(ctx, a.ID(), proto)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		if _, err := s.Write(req); err != nil {
			return nil, err
		}
		if err := s.CloseWrite(); err != nil {
			return nil, err
		}
		return io.ReadAll(s)
	}
	own, err := discovery.Sign(raw, &discovery.Advertisement{Peer: []byte(raw.ID()), Actors: []string{"raw-actor"}, TTLSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := cbor.Marshal(exchangeRequest{Own: own})
	data, err := ask(req)
	if err != nil {
		t.Fatal(err)
	}
	var resp exchangeResponse
	if err := cbor.Unmarshal(data, &resp); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, x := range resp.Ads {
		for _, id := range []libp2ppeer.ID{a.ID(), b.ID()} {
			if ad, err := discovery.Verify(x.Data, id); err == nil {
				got[id.String()] = slices.Contains(ad.Actors, "beta") || id == a.ID()
			}
		}
	}
	if !got[a.ID().String()] || !got[b.ID().String()] {
		t.Fatalf("exchange returned %d advertisements, valid for %v", len(resp.Ads), got)
	}
	// The raw peer's own advertisement, in its request, reached a.
	if refs := a.Directory().Lookup("raw-actor"); len(refs) != 1 {
		t.Fatalf("own advertisement in the request: %v", refs)
	}

	// Bad requests: garbage, and an advertisement forged for b.
	before := a.DirectoryRejected()
	forged, _ := discovery.Sign(raw, &discovery.Advertisement{Peer: []byte(b.ID()), Actors: []string{"fake"}, TTLSeconds: 30})
	forgedReq, _ := cbor.Marshal(exchangeRequest{Own: forged})
	for _, bad := range [][]byte{[]byte("garbage"), forgedReq} {
		if _, err := ask(bad); err == nil {
			t.Fatal("a bad request was answered")
		}
	}
	if got := a.DirectoryRejected() - before; got != 2 {
		t.Fatalf("%d bad requests counted, want 2", got)
	}

	// One request at a time per peer: a second stream of a peer whose
	// first trickles is refused at once, and another peer is answered.
	var slow network.Stream
	defer func() {
		if slow != nil {
			_ = slow.Reset()
		}
	}()
	waitFor(t, func() bool {
		if slow != nil { // refused itself while an ask was answered?
			_ = slow.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			if _, err := slow.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				slow = nil
			}
		}
		if slow == nil {
			if slow, err = raw.NewStream(ctx, a.ID(), proto); err != nil {
				t.Fatal(err)
			}
			if _, err := slow.Write(req[:1]); err != nil { // and no more
				t.Fatal(err)
			}
		}
		busy := a.Directory().Stats().Busy
		_, err := ask(req)
		return err != nil && a.Directory().Stats().Busy > busy
	})
	other := testhost.NewHost(t)
	if err := other.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	st, err := other.NewStream(ctx, a.ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	otherReq, _ := cbor.Marshal(exchangeRequest{})
	if _, err := st.Write(otherReq); err != nil {
		t.Fatal(err)
	}
	_ = st.CloseWrite()
	if data, err := io.ReadAll(st); err != nil || len(data) == 0 {
		t.Fatalf("another peer's request while the slow one waits: %d bytes, %v", len(data), err)
	}

	// Bad answers: a dials a raw peer whose answer holds a forged and a
	// garbled advertisement next to a valid one.
	liar := testhost.NewHost(t)
	liarOwn, _ := discovery.Sign(liar, &discovery.Advertisement{Peer: []byte(liar.ID()), Actors: []string{"liar-actor"}, TTLSeconds: 30})
	// Forged for a peer a knows nothing of (one it holds an advertisement
	// of would not even be checked: it could not replace what a holds).
	_, victimKey, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	victim, _ := libp2ppeer.IDFromPublicKey(victimKey)
	forgedC, _ := discovery.Sign(liar, &discovery.Advertisement{Peer: []byte(victim), Actors: []string{"fake"}, TTLSeconds: 30})
	answer, _ := cbor.Marshal(exchangeResponse{Ads: []exchangeAd{{Data: forgedC, TTL: 30}, {Data: []byte("junk"), TTL: 30}, {Data: liarOwn, TTL: 30}}})
	liar.SetStreamHandler(proto, func(s network.Stream) {
		defer s.Close()
		_, _ = io.ReadAll(io.LimitReader(s, 1<<20))
		_, _ = s.Write(answer)
	})
	before = a.DirectoryRejected()
	if err := a.Connect(ctx, libp2ppeer.AddrInfo{ID: liar.ID(), Addrs: liar.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.Directory().Lookup("liar-actor")) == 1 })
	waitFor(t, func() bool { return a.DirectoryRejected()-before >= 2 })
	if refs := a.Directory().Lookup("fake"); len(refs) != 0 {
		t.Fatalf("forged advertisement accepted: %v", refs)
	}
	if refs := a.Directory().Lookup("beta"); len(refs) != 1 || refs[0].Peer() != b.ID().String() {
		t.Fatalf("b's advertisement after the lie: %v", refs)
	}
}

// Joining and leaving a group is advertised at once, not at the next poll
// (here an hour away).
func TestChangesAdvertisedAtOnce(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("gtest"), peer.WithGroups(true), peer.WithAdvertisements(time.Hour, 90*time.Second)}
	a, b := newNode(t, opts...), newNode(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	groupsOf := func(id libp2ppeer.ID) []string {
		for _, ad := range a.Directory().Peers() {
			if string(ad.Peer) == string(id) {
				return ad.Groups
			}
		}
		return nil
	}
	waitFor(t, func() bool { return len(a.Directory().Peers()) == 1 })
	leave := make(chan struct{})
	spawn(t, b, "member", func(c *actor.Context) {
		if err := group.Join(c, "room"); err != nil {
			t.Error(err)
		}
		c.Receive(actor.On(func(Ping) { group.Leave(c, "room"); close(leave) }))
	})
	waitFor(t, func() bool { return slices.Contains(groupsOf(b.ID()), "room") })
	ref, _ := b.System().Whereis("member")
	b.System().Send(ref, Ping{})
	recv(t, leave)
	waitFor(t, func() bool { return len(a.Directory().Peers()) == 1 && !slices.Contains(groupsOf(b.ID()), "room") })

	// A public actor spawned or stopped is advertised at once too (the
	// advertisement poll is an hour away).
	stop := make(chan struct{})
	spawn(t, b, "visible", func(c *actor.Context) { c.Receive(actor.On(func(Ping) { c.Stop(); close(stop) })) })
	waitFor(t, func() bool { return len(a.Directory().Lookup("visible")) == 1 })
	visible, _ := b.System().Whereis("visible")
	b.System().Send(visible, Ping{})
	recv(t, stop)
	waitFor(t, func() bool { return len(a.Directory().Lookup("visible")) == 0 })
}

// Whereis takes a connected peer's advertisement before one relayed from a
// peer out of reach, whose ID sorts first (anyone can sign advertisements
// of made-up peers whose IDs sort first).
func TestWhereisPrefersConnectedPeers(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("wtest"), peer.WithGroups(true), peer.WithAdvertisements(50*time.Millisecond, 30*time.Second)}
	a, x, y := newNode(t, opts...), newNode(t, opts...), newNode(t, opts...)
	near, far := x, y
	if far.ID() > near.ID() {
		near, far = far, near
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// a - near - far: a hears of far's actors only through near.
	if err := a.Connect(ctx, *near.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if err := far.Connect(ctx, *near.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	spawn(t, near, "svc", echo)
	spawn(t, far, "svc", echo)
	waitFor(t, func() bool { return len(a.Directory().Lookup("svc")) == 2 })
	if a.Host().Network().Connectedness(far.ID()) == network.Connected {
		t.Fatal("a connected to the far peer: the test needs it out of reach")
	}
	want, _ := peer.Ref(near.ID(), "svc")
	if ref, err := a.Whereis(ctx, "svc"); err != nil || ref != want {
		t.Fatalf("whereis: %v %v, want the connected peer's %v", ref, err, want)
	}
}
