package peer

import (
	"context"
	"fmt"
	"testing"
	"time"

	ifconnmgr "github.com/libp2p/go-libp2p/core/connmgr"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// TestDHTBucketsAreTrimmed: kad-dht protects the peers of its routing
// table's two widest buckets (dhtBucketTag); the budget takes that for a
// tag, so a hub whose every peer the DHT "protected" still trims below
// High, and a protection under another tag still holds.
func TestDHTBucketsAreTrimmed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hub := newTestNode(t, WithConnections(Connections{Low: 2, High: 4, Grace: 100 * time.Millisecond}))
	cm := hub.Host().ConnManager()
	var kept *Node
	for i := range 6 {
		nd := newTestNode(t)
		if err := nd.Connect(ctx, *hub.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		cm.Protect(nd.ID(), dhtBucketTag) // what kad-dht does on PeerAdded
		if cm.IsProtected(nd.ID(), "") {
			t.Fatalf("peer %d protected by the DHT's bucket tag", i)
		}
		if ti := cm.GetTagInfo(nd.ID()); ti == nil || ti.Tags[dhtBucketTag] != dhtBucketValue {
			t.Fatalf("peer %d: tags %+v, want %s=%d", i, ti, dhtBucketTag, dhtBucketValue)
		}
		if i == 0 {
			kept = nd
			cm.Protect(nd.ID(), "other")
		}
	}
	if cm.Unprotect(kept.ID(), dhtBucketTag) != true {
		t.Fatal("Unprotect of the bucket tag dropped another tag's protection")
	}
	testutil.EventuallyNil(t, 20*time.Second, func() error {
		if n := len(hub.Host().Network().Peers()); n >= 4 {
			return fmt.Errorf("%d peers still connected", n)
		}
		return nil
	})
	if len(hub.Host().Network().ConnsToPeer(kept.ID())) == 0 {
		t.Fatal("the peer protected under another tag was trimmed")
	}
}

// The host's connection manager must stay every interface libp2p's
// services look for: GossipSub's tag tracer takes a Decayer.
var (
	_ ifconnmgr.ConnManager = budgetConnMgr{}
	_ ifconnmgr.Decayer     = budgetConnMgr{}
)

// TestDHTBucketTagSymmetric: what kad-dht does when a peer joins one of
// its two widest buckets (Protect) and when it leaves it (Unprotect, then
// UntagPeer) leaves the peer as it found it: no value left, and another
// tag's protection and value untouched.
func TestDHTBucketTagSymmetric(t *testing.T) {
	cm, err := newConnManager(Connections{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	m := budgetConnMgr{cm}
	const p = libp2ppeer.ID("peer")
	m.TagPeer(p, "other", 3)
	m.Protect(p, dhtBucketTag)
	if ti := m.GetTagInfo(p); ti == nil || ti.Value != 3+dhtBucketValue {
		t.Fatalf("after Protect: %+v, want value %d", ti, 3+dhtBucketValue)
	}
	if m.IsProtected(p, dhtBucketTag) || m.IsProtected(p, "") {
		t.Fatal("the bucket tag protects")
	}
	if m.Unprotect(p, dhtBucketTag) {
		t.Fatal("Unprotect reports a protection nothing made")
	}
	m.UntagPeer(p, dhtBucketTag)
	if ti := m.GetTagInfo(p); ti == nil || ti.Value != 3 || len(ti.Tags) != 1 {
		t.Fatalf("after the bucket left: %+v, want only other=3", ti)
	}
	m.Protect(p, "pin")
	m.Protect(p, dhtBucketTag)
	if !m.Unprotect(p, dhtBucketTag) || !m.IsProtected(p, "pin") {
		t.Fatal("the bucket's Unprotect undid another tag's protection")
	}
	if m.Unprotect(p, "pin") || m.IsProtected(p, "") {
		t.Fatal("Unprotect of the last tag left p protected")
	}
}
