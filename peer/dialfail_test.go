package peer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// TestDialFailuresListsUndialablePeers: a discovered peer that cannot be
// dialed is listed with its addresses and error until it connects.
func TestDialFailuresListsUndialablePeers(t *testing.T) {
	a, b := newTestNode(t), newTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info := *b.AddrInfo()
	bad := libp2ppeer.AddrInfo{ID: b.ID()} // no address: the dial fails at once
	if err := a.connectFound(ctx, bad); err == nil {
		t.Fatal("dialed a peer with no address")
	}
	fails := a.DialFailures()
	if len(fails) != 1 || fails[0].Peer != b.ID() || fails[0].Err == "" {
		t.Fatalf("dial failures %+v, want b with its error", fails)
	}
	if err := a.connectFound(ctx, info); err != nil {
		t.Fatal(err)
	}
	if fails := a.DialFailures(); len(fails) != 0 {
		t.Fatalf("dial failures %+v after b connected, want none", fails)
	}
}

// TestDialFailuresAreBounded: the list keeps the latest maxDialFailures.
func TestDialFailuresAreBounded(t *testing.T) {
	var d dialFailures
	ids := make([]libp2ppeer.ID, maxDialFailures+5)
	for i := range ids {
		ids[i] = libp2ppeer.ID(fmt.Sprintf("peer-%d", i))
		d.failed(libp2ppeer.AddrInfo{ID: ids[i]}, errors.New("refused"))
	}
	if len(d.m) != maxDialFailures {
		t.Fatalf("%d remembered, want %d", len(d.m), maxDialFailures)
	}
	if _, ok := d.m[ids[0]]; ok {
		t.Fatal("the oldest failure was kept")
	}
	if _, ok := d.m[ids[len(ids)-1]]; !ok {
		t.Fatal("the newest failure was dropped")
	}
}
