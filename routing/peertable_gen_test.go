package routing

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
)

// A declaration of the peer's former incarnation, acted on (its
// PeerDown done) only after the peer's restart was heard (lossHeard lets
// go of Router.mu between heard and actedOn, and a hello of the new
// incarnation may run in between), must not count as acted on for the new
// incarnation, whose declarations are numbered anew from 1.
func TestPeerTableActedOnAfterRestartDoesNotCoverTheNewIncarnation(t *testing.T) {
	tab := newPeerTable(func(network.Conn) bool { return false })
	tab.hello(nil, tp, 1, nil)
	acts := tab.heard(nil, tp, 5, 0) // old incarnation's lostBody 5: PeerDown being performed
	if len(acts) != 1 {
		t.Fatalf("heard 5: %+v", acts)
	}
	tab.hello(nil, tp, 2, nil)           // meanwhile: the peer restarted (forget)
	tab.actedOn(nil, tp, 5, acts[0].gen) // lossHeard's second half, for the old incarnation
	// The new incarnation declares its loss 1 and opens a user stream whose
	// hello says Lost: 1. Nothing of it was heard yet.
	if tab.awaited(tp, 1) {
		t.Fatal("a user stream of the new incarnation announcing Lost 1 hands on before its lostBody 1 was even heard: acted 5 came from the former incarnation")
	}
}

// The same with a presumed declaration: a reader of the former
// incarnation whose wait timed out (lossPresumed) across the restart.
func TestPeerTablePresumedDoneAfterRestartDoesNotCoverTheNewIncarnation(t *testing.T) {
	tab := newPeerTable(func(network.Conn) bool { return false })
	tab.hello(nil, tp, 1, nil)
	acts := tab.presumed(nil, tp, 7)
	tab.hello(nil, tp, 2, nil)
	tab.presumedDone(nil, tp, 7, acts[0].gen)
	if tab.awaited(tp, 3) {
		t.Fatal("the new incarnation's Lost 3 counts as acted on: acted 7 came from the former incarnation")
	}
}

// The same across a disconnection and a reconnection of the same
// incarnation: a stale actedOn clears the declaration a reset here asked
// for since (want), so the next user stream hands on without waiting.
func TestPeerTableActedOnAcrossReconnectKeepsWhatWasAskedSince(t *testing.T) {
	tab := newPeerTable(func(network.Conn) bool { return false })
	tab.hello(nil, tp, 1, nil)
	acts := tab.heard(nil, tp, 5, 0) // its lostBody 5: PeerDown being performed
	tab.gone(nil, tp)                // it disconnects
	tab.hello(nil, tp, 1, nil)       // and reconnects (identify)
	tab.askLoss(nil, tp, true, 9)
	if tab.awaited(tp, 0) {
		t.Fatal("setup: the request does not hold back the next user stream")
	}
	tab.actedOn(nil, tp, 5, acts[0].gen) // lossHeard's second half, from before the disconnection
	if tab.awaited(tp, 0) {
		t.Fatal("a user stream hands on before the declaration asked for after the reconnection: a stale actedOn cleared want")
	}
}

// A lostBody of the peer's former incarnation, read on its control
// stream after the new incarnation's hello came on another, is not a
// declaration of the new one: no PeerDown. One on a stream of the new
// incarnation, or on a stream without a hello, is.
func TestPeerTableFormerIncarnationsLostBodyIgnored(t *testing.T) {
	tab := newPeerTable(func(network.Conn) bool { return false })
	tab.hello(nil, tp, 1, nil)
	tab.hello(nil, tp, 2, nil) // restarted: the old control stream is still read
	if acts := tab.heard(nil, tp, 5, 1); len(acts) != 0 {
		t.Fatalf("the former incarnation's lostBody 5: %+v, want nothing", acts)
	}
	if acts := tab.heard(nil, tp, 1, 2); len(acts) != 1 || acts[0].kind != actPeerDown {
		t.Fatalf("the new incarnation's lostBody 1: %+v, want a PeerDown", acts)
	}
	if acts := tab.heard(nil, tp, 2, 0); len(acts) != 1 || acts[0].kind != actPeerDown {
		t.Fatalf("lostBody 2 on a stream without a hello: %+v, want a PeerDown", acts)
	}
}
