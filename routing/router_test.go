package routing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
)

// A peer seen with a new incarnation has restarted: monitors on its old
// actors fire even before any disconnection is noticed.
func TestNewIncarnationFiresMonitors(t *testing.T) {
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := New(Config{Host: h, Registry: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	sys, err := actor.New(actor.WithPeer(h.ID().String()), actor.WithRemote(r), actor.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Bind(sys); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
		_ = r.Close(ctx)
	}()
	other, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	remote, _ := actor.NewRef(other.ID().String(), "x")

	downs := make(chan actor.Down, 1)
	ready := make(chan struct{})
	if _, err := sys.Spawn("w", func(c *actor.Context) {
		c.Monitor(remote)
		close(ready)
		c.Receive(actor.On(func(d actor.Down) { downs <- d }))
	}); err != nil {
		t.Fatal(err)
	}
	<-ready
	r.hello(other.ID(), 11) // first contact: nothing fires
	r.hello(other.ID(), 11) // same incarnation: nothing fires
	r.hello(other.ID(), 12) // restarted
	select {
	case d := <-downs:
		if d.Ref != remote || !errors.Is(d.Reason, actor.ErrNodeDown) {
			t.Fatalf("down %+v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Down after a new incarnation")
	}
	if st := r.Stats(); st.PeersDown != 1 || st.RemoteIncarnated != 3 {
		t.Fatalf("stats %+v", st)
	}
}
