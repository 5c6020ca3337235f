package peer

import (
	"context"
	"testing"
	"time"
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
	for len(hub.Host().Network().Peers()) >= 4 {
		if ctx.Err() != nil {
			t.Fatalf("%d peers still connected", len(hub.Host().Network().Peers()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(hub.Host().Network().ConnsToPeer(kept.ID())) == 0 {
		t.Fatal("the peer protected under another tag was trimmed")
	}
}
