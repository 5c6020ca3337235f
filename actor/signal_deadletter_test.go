package actor

import (
	"errors"
	"testing"
)

// TestRefusedRemoteDownIsDeadLetter: a Down or exit signal that the
// transport refuses on its way to another peer is a dead letter (as a
// Down or an Exit), not dropped without a trace; one to a gone actor of
// this peer is dropped.
func TestRefusedRemoteDownIsDeadLetter(t *testing.T) {
	dead := make(chan DeadLetter, 8)
	refused := errors.New("link full")
	s := newSys(t, WithPeer("me"), deadLetters(dead))
	far, self := mustRef(t, "them/x"), mustRef(t, "me/y")
	s.undeliverable(far, s.newNode(downSignal{ID: 7}, self, 0, kindSignal), refused)
	if d := recv(t, dead); d.Reason != refused || d.Msg != (Down{Ref: self, ID: 7}) {
		t.Fatalf("dead letter %+v, want the Down with the refusal", d)
	}
	s.undeliverable(far, s.newNode(exitSignal{Linked: true}, self, 0, kindSignal), refused)
	if d := recv(t, dead); d.Msg != (Exit{From: self}) {
		t.Fatalf("dead letter %+v, want the Exit", d)
	}
	s.undeliverable(mustRef(t, "me/gone"), s.newNode(downSignal{ID: 8}, far, 0, kindSignal), ErrNoSuchActor)
	noDeadLetter(t, dead, "a Down to a gone local actor")
}
