package chat

import (
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-mesh/troupe/actor"
)

const (
	bobPeer      = "12D3KooWBobPeerBBBBBB"
	impostorPeer = "12D3KooWAAImpostorIIIIII" // sorts before bob's
	localPeer    = "12D3KooWLocalLLLLLL"
)

func chatRef(t *testing.T, peer, nick string) actor.Ref {
	t.Helper()
	ref, err := actor.NewRef(peer, chatActorPrefix+nick)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestMsgGoesOnlyToBoundPeer: an impostor holding chat-bob, whose peer ID
// sorts first, never gets /msg bob, whether bob's own actor is known or
// not; an unknown nick is an error.
func TestMsgGoesOnlyToBoundPeer(t *testing.T) {
	var b nickBook
	b.bind("alice", localPeer)
	b.show("bob", bobPeer) // bob was seen in the room
	bob, fake := chatRef(t, bobPeer, "bob"), chatRef(t, impostorPeer, "bob")

	for _, cands := range [][]actor.Ref{{fake, bob}, {bob, fake}} {
		if to, shown, err := resolveNick(&b, "bob", cands); err != nil || to != bob || shown != "bob" {
			t.Fatalf("/msg bob with %v: %v %q %v; want bob's own actor", cands, to, shown, err)
		}
	}
	// bob's owner is absent: an error, never the impostor.
	if to, _, err := resolveNick(&b, "bob", []actor.Ref{fake}); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("/msg bob with only an impostor: %v, %v; want an error", to, err)
	}
	// An unknown nick: an error that names the holders to pick from.
	carol := chatRef(t, impostorPeer, "carol")
	_, _, err := resolveNick(&b, "carol", []actor.Ref{carol})
	if err == nil || !strings.Contains(err.Error(), "carol@"+peerTail(impostorPeer)) {
		t.Fatalf("/msg of an unbound nick: %v; want an error naming carol@tail", err)
	}
	if _, _, err := resolveNick(&b, "dave", nil); err == nil {
		t.Fatal("/msg of a nick nobody has: no error")
	}
	// nick@tail picks that peer, and is shown so.
	if to, shown, err := resolveNick(&b, "bob@"+peerTail(impostorPeer), []actor.Ref{bob, fake}); err != nil || to != fake || shown != "bob@"+peerTail(impostorPeer) {
		t.Fatalf("/msg bob@tail: %v %q %v", to, shown, err)
	}
	// A tail that two peers end with is ambiguous, unless the owner is one.
	twin := chatRef(t, "12D3KooWTwinXXBBBBBB", "bob")
	if _, _, err := resolveNick(&b, "bob@BBB", []actor.Ref{twin, bob}); err != nil {
		t.Fatalf("a tail matching the owner and another: %v", err)
	}
	other := chatRef(t, "12D3KooWOtherXXBBBBBB", "eve")
	twin2 := chatRef(t, "12D3KooWTwinXXBBBBBB", "eve")
	if _, _, err := resolveNick(&b, "eve@BBB", []actor.Ref{other, twin2}); err == nil || !strings.Contains(err.Error(), "more than one peer") {
		t.Fatalf("an ambiguous tail: %v", err)
	}
	if _, _, err := resolveNick(&b, "bad\x1bnick", []actor.Ref{bob}); err == nil {
		t.Fatal("an invalid nick resolved")
	}
}

// TestNickBindingsPerPeerCapped: one peer cannot bind more than
// maxNicksPerPeer nicks; others' nicks still bind; the local user's bind
// takes its nick from anyone.
func TestNickBindingsPerPeerCapped(t *testing.T) {
	var b nickBook
	for i := range maxBoundNicks {
		b.show("n"+strconv.Itoa(i), impostorPeer)
	}
	if got := b.show("bob", bobPeer); got != "bob" {
		t.Fatalf("after one peer bound many nicks, bob shows as %q", got)
	}
	bound := 0
	for i := range maxBoundNicks {
		if b.owns("n"+strconv.Itoa(i), impostorPeer) {
			bound++
		}
	}
	if bound != maxNicksPerPeer {
		t.Fatalf("one peer bound %d nicks, want %d", bound, maxNicksPerPeer)
	}
	if got := b.label("n0", bobPeer); got != "n0@"+peerTail(bobPeer) {
		t.Fatalf("label of another's nick: %q", got)
	}
	b.bind("n0", localPeer)
	if !b.owns("n0", localPeer) || b.show("n"+strconv.Itoa(maxNicksPerPeer), impostorPeer) != "n"+strconv.Itoa(maxNicksPerPeer) {
		t.Fatal("the local bind did not take the nick, or did not free a binding of its peer")
	}
}

// TestDirectMessageBindsNothing: a stranger's direct message is shown
// with its peer and does not claim the nick.
func TestDirectMessageBindsNothing(t *testing.T) {
	var b nickBook
	if got := b.label("bob", impostorPeer); got != "bob@"+peerTail(impostorPeer) {
		t.Fatalf("label = %q", got)
	}
	if _, ok := b.ownerOf("bob"); ok {
		t.Fatal("label bound the nick")
	}
	if got := b.show("bob", bobPeer); got != "bob" {
		t.Fatalf("bob seen in the room after a stranger's message: %q", got)
	}
}
