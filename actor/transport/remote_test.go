package transport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
)

// fullRemote is a BatchRemote and a DirectRemote that reports which of
// its methods carried each message.
type fullRemote struct{ via chan string }

func (f *fullRemote) Deliver(to, from actor.Ref, msg any, corr uint64, reply bool) error {
	f.via <- "Deliver"
	return nil
}

func (f *fullRemote) DeliverBatch(from actor.Ref, msgs []transport.Outbound) (int, error) {
	for range msgs {
		f.via <- "DeliverBatch"
	}
	return len(msgs), nil
}

func (f *fullRemote) DeliverDirect(ctx context.Context, to, from actor.Ref, msg any, corr uint64, reply bool) error {
	f.via <- "DeliverDirect"
	return errors.New("not sent") // the Ask fails at once
}

var (
	_ transport.BatchRemote  = (*fullRemote)(nil)
	_ transport.DirectRemote = (*fullRemote)(nil)
)

// TestRemoteExtensionsAreUsed: a Remote that is also a BatchRemote gets
// an actor's sends through DeliverBatch, and one that is a DirectRemote
// gets System.Ask's request through DeliverDirect. (actor sees them
// through interfaces of its own with the same method sets: a method that
// differed would make the system fall back to Deliver silently.)
func TestRemoteExtensionsAreUsed(t *testing.T) {
	f := &fullRemote{via: make(chan string, 16)}
	s, err := transport.NewSystem(func(*transport.Port) (transport.Remote, transport.GroupTransport, error) {
		return f, nil, nil
	}, actor.WithPeer("me"))
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, s)
	far, _ := actor.NewRef("far", "x")
	if _, err := s.Spawn("sender", func(c *actor.Context) {
		c.Send(far, 1)
		c.Send(far, 2)
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if v := recv(t, f.via); v != "DeliverBatch" {
			t.Fatalf("an actor's send went through %s, want DeliverBatch", v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Ask(ctx, far, "q"); err == nil {
		t.Fatal("the Ask succeeded; its remote refused the request")
	}
	if v := recv(t, f.via); v != "DeliverDirect" {
		t.Fatalf("System.Ask's request went through %s, want DeliverDirect", v)
	}
}
