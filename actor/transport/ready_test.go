package transport_test

import (
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
)

// TestPortWaitsForNewSystem: a transport may take messages before its
// factory returns (routing installs its stream handlers there). An Ask
// request for a missing actor that arrives then must be answered through
// the transport being built, not dead-lettered as if the system had no
// Remote (and must not race with NewSystem installing it): the Port's
// Deliver waits until NewSystem has returned.
func TestPortWaitsForNewSystem(t *testing.T) {
	k := newSink()
	far, _ := actor.NewRef("far", "asker")
	missing, _ := actor.NewRef("me", "nobody")
	returned := make(chan struct{})
	s, err := transport.NewSystem(func(p *transport.Port) (transport.Remote, transport.GroupTransport, error) {
		go func() {
			p.Deliver(transport.Envelope{To: missing, From: far, Msg: "q", Corr: 7})
			close(returned)
		}()
		// Deliver must not return while the factory runs. (Without the
		// wait it returns at once and the answer is lost.)
		select {
		case <-returned:
			t.Error("Port.Deliver returned before NewSystem did")
		case <-time.After(100 * time.Millisecond):
		}
		return k, nil, nil
	}, actor.WithPeer("me"))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	e := recv(t, k.sent)
	if _, ok := e.Msg.(transport.Undeliverable); !ok || e.To != far || e.Corr != 7 || !e.Reply {
		t.Fatalf("the remote got %+v, want Undeliverable answering Ask 7 of %v", e, far)
	}
	recv(t, returned)
}
