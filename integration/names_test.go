package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
	"github.com/troupe-mesh/troupe/peer"
)

// Above the lookup threshold (3 here, 32 by default), names are found
// through the DHT by a peer that holds no advertisement at all (no
// groups, so no directory): the provider of the name's key is confirmed
// by the provider itself, and a peer whose record is stale (it provided
// the name and no longer hosts it) is passed over, so a name only it
// provided is not found.
func TestNamesFoundByDHTLookup(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("lookup"), peer.WithLookupAbove(3), peer.WithDHTFindEvery(time.Second)}
	first := newNode(t, append(opts, peer.WithDHT())...)
	join := append(opts, peer.WithDHT(*first.AddrInfo()))
	owner, stale, finder := newNode(t, join...), newNode(t, join...), newNode(t, join...)
	newNode(t, join...)

	quits := func(c *actor.Context) { c.Receive(actor.On(func(Ping) {})) } // stops at its first Ping
	stales := []actor.Ref{spawn(t, stale, "ghost", quits), spawn(t, stale, "svc", quits)}
	svc := spawn(t, owner, "svc", echo)
	testutil.Eventually(t, 20*time.Second, "names provided", func() bool {
		return owner.NamesProvided() >= 1 && stale.NamesProvided() >= 2
	})
	// stale no longer hosts its names; its records stay in the DHT.
	for _, ref := range stales {
		stale.System().Send(ref, Ping{1})
	}
	testutil.Eventually(t, 5*time.Second, "stale's actors stopped", func() bool { return len(stale.System().Names()) == 0 })

	whereisByLookup(t, finder, "svc", svc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := finder.System().Ask(ctx, svc, Ping{7})
	if err != nil || v != (Pong{7}) {
		t.Fatalf("ask %v: %v, %v", svc, v, err)
	}
	if got, err := finder.Whereis(ctx, "ghost"); !errors.Is(err, actor.ErrNoSuchActor) {
		t.Fatalf("Whereis(ghost) = %v, %v; want ErrNoSuchActor (only a stale provider)", got, err)
	}
	// Answers are cached: a second lookup costs the DHT nothing.
	n := finder.NameLookups()
	if got, err := finder.Whereis(ctx, "svc"); err != nil || got != svc || finder.NameLookups() != n {
		t.Fatalf("cached Whereis(svc) = %v, %v after %d more lookups", got, err, finder.NameLookups()-n)
	}
}

// Above the lookup threshold a peer's directory is narrow: it is off the
// advertisement topic and holds the advertisements of connected peers
// only, so a name of a peer it is not connected to is found by lookup.
// Here the finder's connection to the owner is closed (and closed again
// should discovery dial it back) until its directory dropped the
// owner's advertisement; Whereis then finds the name through the DHT.
func TestNarrowDirectoryFindsNamesByLookup(t *testing.T) {
	opts := []peer.Option{peer.WithMesh("narrow"), peer.WithGroups(true), peer.WithLookupAbove(3),
		peer.WithAdvertisements(100*time.Millisecond, 3*time.Second)}
	first := newNode(t, append(opts, peer.WithDHT())...)
	join := append(opts, peer.WithDHT(*first.AddrInfo()))
	owner, finder := newNode(t, join...), newNode(t, join...)
	newNode(t, join...)
	svc := spawn(t, owner, "svc", echo)
	testutil.Eventually(t, 20*time.Second, "finder narrow, owner's name provided", func() bool {
		return finder.Directory().Narrow() && owner.Directory().Narrow() && owner.NamesProvided() >= 1
	})
	testutil.Eventually(t, 20*time.Second, "the finder holds no advertisement of the owner", func() bool {
		if finder.Host().Network().Connectedness(owner.ID()) == network.Connected {
			_ = finder.Host().Network().ClosePeer(owner.ID())
		}
		for _, ad := range finder.Directory().Peers() {
			id, err := libp2ppeer.IDFromBytes(ad.Peer)
			if err != nil || finder.Host().Network().Connectedness(id) != network.Connected {
				return false // a narrow directory holds connected peers' only
			}
		}
		return len(finder.Directory().Lookup("svc")) == 0
	})
	whereisByLookup(t, finder, "svc", svc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := finder.System().Ask(ctx, svc, Ping{3}); err != nil || v != (Pong{3}) {
		t.Fatalf("ask %v: %v, %v", svc, v, err)
	}
	if st := finder.Directory().Stats(); st.TopicLeft == 0 {
		t.Fatalf("directory stats %+v: the finder never left the topic", st)
	}
}

// whereisByLookup checks that finder's Whereis(name) answers want and
// that it took a DHT lookup to do so.
func whereisByLookup(t *testing.T, finder *peer.Node, name string, want actor.Ref) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := finder.NameLookups()
	got, err := finder.Whereis(ctx, name)
	if err != nil || got != want {
		t.Fatalf("Whereis(%s) = %v, %v; want %v", name, got, err, want)
	}
	if finder.NameLookups() == before {
		t.Fatalf("%s found without a DHT lookup", name)
	}
}
