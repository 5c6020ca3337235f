package chat

import (
	"strconv"
	"testing"
	"time"
)

func TestNickBookBindsFirstPeer(t *testing.T) {
	var b nickBook
	b.bind("me", "LOCALPEER")
	for _, c := range []struct{ nick, peer, want string }{
		{"me", "LOCALPEER", "me"},
		{"me", "12D3KooWRemoteAAAAAA", "me@AAAAAA"}, // another peer claims the local nick
		{"bob", "12D3KooWBobBBBBBB", "bob"},         // first seen wins
		{"bob", "12D3KooWMalloryCCCCCC", "bob@CCCCCC"},
		{"bob", "12D3KooWBobBBBBBB", "bob"},
	} {
		if got := b.show(c.nick, c.peer); got != c.want {
			t.Fatalf("show(%s, %s) = %s, want %s", c.nick, c.peer, got, c.want)
		}
	}
	if !b.owns("bob", "12D3KooWBobBBBBBB") || b.owns("bob", "12D3KooWMalloryCCCCCC") {
		t.Fatal("owns disagrees with show")
	}
	// A full book binds no more: a newcomer shows its peer.
	for i := range maxBoundNicks {
		b.show("n"+strconv.Itoa(i), "P"+strconv.Itoa(i/maxNicksPerPeer))
	}
	if got := b.show("late", "12D3KooWLateDDDDDD"); got != "late@DDDDDD" {
		t.Fatalf("a nick after the book is full: %s, want late@DDDDDD", got)
	}
}

func TestLineLimiterPerPeer(t *testing.T) {
	now := time.Unix(1000, 0)
	l := lineLimiter{now: func() time.Time { return now }}
	for i := range lineBurst {
		if !l.allow("flood") {
			t.Fatalf("line %d of a burst refused", i)
		}
	}
	if l.allow("flood") || l.dropped.Load() != 1 {
		t.Fatalf("the line after a burst was shown (dropped %d)", l.dropped.Load())
	}
	if !l.allow("quiet") {
		t.Fatal("another peer's line was refused")
	}
	now = now.Add(time.Second / lineRate)
	if !l.allow("flood") || l.allow("flood") {
		t.Fatal("after 1/rate s, want one more line and no second")
	}
}
