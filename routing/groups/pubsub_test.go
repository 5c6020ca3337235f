package groups

import (
	"context"
	"fmt"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

func subOpts(topics ...string) []*pb.RPC_SubOpts {
	out := make([]*pb.RPC_SubOpts, len(topics))
	for i, t := range topics {
		sub := true
		out[i] = &pb.RPC_SubOpts{Subscribe: &sub, Topicid: &t}
	}
	return out
}

// TestTopicFilterBoundsSubscriptions: a peer's announcements of topics of
// no mesh of ours are dropped; of the mesh's, at most maxTopicsPerPeer are
// kept per peer (another peer has its own count, and an unsubscription
// makes room); an announcement of more than maxSubsPerRPC at once is
// refused whole, and a peer in 1,000 groups announces them all at once.
func TestTopicFilterBoundsSubscriptions(t *testing.T) {
	f := NewTopicFilter("m")
	a, b := testhost.NewPeerID(t), testhost.NewPeerID(t)
	for _, topic := range []string{"/troupe/m/ads", "/troupe/m/group/room", "/troupe/m/group/a/b"} {
		if !f.CanSubscribe(topic) {
			t.Fatalf("%s refused", topic)
		}
	}
	for _, topic := range []string{"/troupe/other/ads", "/troupe/m/group/", "/evil", "/troupe/m/adsx"} {
		if f.CanSubscribe(topic) {
			t.Fatalf("%s admitted", topic)
		}
	}
	kept := 0
	for batch := range 50 { // 10,000 topics of no mesh of ours
		topics := make([]string, 200)
		for i := range topics {
			topics[i] = fmt.Sprintf("/evil/%d/%d", batch, i)
		}
		out, err := f.FilterIncomingSubscriptions(a, subOpts(topics...))
		if err != nil {
			t.Fatal(err)
		}
		kept += len(out)
	}
	if kept != 0 {
		t.Fatalf("%d foreign topics kept", kept)
	}
	kept = 0
	for batch := range 6 { // 1,200 of the mesh's
		topics := make([]string, 200)
		for i := range topics {
			topics[i] = fmt.Sprintf("/troupe/m/group/g%d-%d", batch, i)
		}
		out, err := f.FilterIncomingSubscriptions(a, subOpts(topics...))
		if err != nil {
			t.Fatal(err)
		}
		kept += len(out)
	}
	if kept != maxTopicsPerPeer {
		t.Fatalf("%d of the mesh's topics kept for one peer, want %d", kept, maxTopicsPerPeer)
	}
	if out, _ := f.FilterIncomingSubscriptions(b, subOpts("/troupe/m/group/x")); len(out) != 1 {
		t.Fatal("another peer's announcement was dropped")
	}
	unsub := false
	topic := "/troupe/m/group/g0-0"
	if out, _ := f.FilterIncomingSubscriptions(a, []*pb.RPC_SubOpts{{Subscribe: &unsub, Topicid: &topic}}); len(out) != 1 {
		t.Fatal("an unsubscription was dropped")
	}
	if out, _ := f.FilterIncomingSubscriptions(a, subOpts("/troupe/m/group/new")); len(out) != 1 {
		t.Fatal("no room after an unsubscription")
	}
	many := make([]string, maxSubsPerRPC+1)
	for i := range many {
		many[i] = fmt.Sprintf("/troupe/m/group/many%d", i)
	}
	if _, err := f.FilterIncomingSubscriptions(b, subOpts(many...)); err == nil {
		t.Fatal("an announcement of too many topics at once was taken")
	}
	thousand := make([]string, 1000)
	for i := range thousand {
		thousand[i] = fmt.Sprintf("/troupe/m/group/k%d", i)
	}
	if out, err := f.FilterIncomingSubscriptions(testhost.NewPeerID(t), subOpts(thousand...)); err != nil || len(out) != 1000 {
		t.Fatalf("a first announcement of 1,000 groups: %d kept, %v", len(out), err)
	}
	f.Forget(a)
	if out, _ := f.FilterIncomingSubscriptions(a, subOpts("/troupe/m/group/again")); len(out) != 1 {
		t.Fatal("a forgotten peer has no room")
	}
}

// hostilePubSub is a host with a GossipSub of its own (default options,
// signing its messages), connected to to.
func hostilePubSub(t *testing.T, to host.Host) (host.Host, *pubsub.PubSub) {
	t.Helper()
	h := testhost.NewHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before NewHost's cleanup closes h
	ps, err := pubsub.NewGossipSub(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	if err := h.Connect(cctx, libp2ppeer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
	return h, ps
}

// TestPeerSendingInvalidGroupMessagesIsIgnored: a peer that publishes
// messages the group's validator rejects is graylisted after a few: its
// valid messages, delivered before, are not delivered any more.
func TestPeerSendingInvalidGroupMessagesIsIgnored(t *testing.T) {
	quiet := testutil.QuietLogger()
	h, sys := testPeer(t, config{Logger: quiet})
	news := watchRoom(t, sys)
	_, hps := hostilePubSub(t, h)
	topic, err := hps.Join("/troupe/test/group/room")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topic.Subscribe(); err != nil {
		t.Fatal(err)
	}
	valid := func(text string) []byte {
		reg, _ := codec.NewRegistry()
		typ, body, err := reg.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		data, err := codec.AppendEnvelope(nil, &codec.Envelope{Kind: codec.KindUser, To: "room", FromName: "x", Type: typ, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Until the hostile peer sees us in the topic, publishing reaches
	// nobody: publish until the first message arrives.
	got := false
	for !got {
		if err := topic.Publish(ctx, valid("hello")); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-news:
			got = m == "hello"
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the hostile peer's valid message never arrived")
		}
	}
	for range 5 {
		if err := topic.Publish(ctx, []byte("not an envelope")); err != nil {
			t.Fatal(err)
		}
	}
	// Once rejected messages are counted, its messages are ignored.
	deadline := time.Now().Add(10 * time.Second)
	for {
		drain(news)
		if err := topic.Publish(ctx, valid("after")); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-news:
			if m == "after" && time.Now().Before(deadline) {
				continue // not graylisted yet
			}
			t.Fatalf("got %v: the peer is not ignored", m)
		case <-time.After(2 * time.Second):
		}
		break
	}
}
