package routing

import (
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/troupe-mesh/troupe/actor"
)

// A peer seen with a new incarnation has restarted: monitors on its old
// actors fire even before any disconnection is noticed.
func TestNewIncarnationFiresMonitors(t *testing.T) {
	_, r, sys := testRouter(t, 0)
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

// An agent version announces an incarnation only in the form AgentVersion
// writes; anything else announces none.
func TestAgentVersionCarriesTheIncarnation(t *testing.T) {
	for _, inc := range []uint64{1, 0xdeadbeef, ^uint64(0)} {
		if got, ok := parseAgentVersion(AgentVersion(inc)); !ok || got != inc {
			t.Errorf("AgentVersion(%x) parses as %x, %v", inc, got, ok)
		}
	}
	for _, agent := range []string{
		"", "go-libp2p/0.52.0", "troupe/1", "troupe/1 incarnation/", "troupe/1 incarnation/0",
		"troupe/1 incarnation/xyz", "troupe/1 incarnation/1ffffffffffffffff", "other/1 incarnation/12",
	} {
		if inc, ok := parseAgentVersion(agent); ok {
			t.Errorf("%q announces incarnation %x", agent, inc)
		}
	}
}
