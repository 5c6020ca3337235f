package daemon

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/peer"
)

// TestVersionIsOptionsVersion: the version Start is given is the one
// 'troupe id' and the info actor (asked from another peer, through the
// codec's "troupe.Info") report; package main passes its buildVersion.
func TestVersionIsOptionsVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := cli.Home(t.TempDir())
	cfg, unlock, err := h.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	cfg.Listen, cfg.MDNS, cfg.DHT = []string{"/ip4/127.0.0.1/tcp/0"}, false, "off"
	b, err := Start(ctx, h, cfg, Options{Logs: &cli.LockedWriter{W: new(bytes.Buffer)}, Out: &cli.LockedWriter{W: new(bytes.Buffer)}, Version: "v9.8.7-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if v := b.id().Version; v != "v9.8.7-test" {
		t.Fatalf("id's version %q, want the one Start was given", v)
	}
	a, _ := startTestDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
	if err := a.node.Connect(ctx, *b.node.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	info, _ := peer.Ref(b.node.ID(), "info")
	reply, err := a.node.System().Ask(ctx, info, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if i, ok := reply.(Info); !ok || i.Version != "v9.8.7-test" || i.Peer != b.node.ID().String() {
		t.Fatalf("info replied %#v, want an Info with the version Start was given", reply)
	}
}
