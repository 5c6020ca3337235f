package groups

import (
	"slices"
	"testing"
	"time"
)

// The gate announces a group at once, then at most once per gap however
// many ask, each group on its own; a question after a quiet gap goes at
// once again, and nothing is remembered of groups quiet for a gap.
func TestAnnounceGateSpacesAnnouncements(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	g := newAnnounceGate(time.Second)
	if !g.ask("a", at(0)) {
		t.Fatal("a first question waited")
	}
	if _, ok := g.next(); ok {
		t.Fatal("pending after an announcement made at once")
	}
	for ms := 100; ms < 1000; ms += 100 { // 9 questions within the gap
		if g.ask("a", at(ms)) {
			t.Fatalf("announced again at %d ms, within the gap", ms)
		}
	}
	if !g.ask("b", at(500)) {
		t.Fatal("another group waited for a's gap")
	}
	g.ask("b", at(600))
	if next, ok := g.next(); !ok || !next.Equal(at(1000)) {
		t.Fatalf("next = %v %v, want a's gap end at 1000 ms", next, ok)
	}
	if due := g.due(at(999)); len(due) != 0 {
		t.Fatalf("due before the gap ended: %v", due)
	}
	if due := g.due(at(1000)); !slices.Equal(due, []string{"a"}) {
		t.Fatalf("due at 1000 ms: %v, want [a]", due)
	}
	if next, ok := g.next(); !ok || !next.Equal(at(1500)) {
		t.Fatalf("next = %v %v, want b's at 1500 ms", next, ok)
	}
	if due := g.due(at(1600)); !slices.Equal(due, []string{"b"}) {
		t.Fatalf("due at 1600 ms: %v, want [b]", due)
	}
	// a was announced at 1000 ms: a question at 1500 waits for 2000.
	if g.ask("a", at(1500)) {
		t.Fatal("a announced twice within a gap")
	}
	if due := g.due(at(2000)); !slices.Equal(due, []string{"a"}) {
		t.Fatalf("due at 2000 ms: %v, want [a]", due)
	}
	if due := g.due(at(4000)); len(due) != 0 || len(g.last) != 0 || len(g.pending) != 0 {
		t.Fatalf("after quiet gaps: due %v, last %v, pending %v; want nothing held", due, g.last, g.pending)
	}
	if !g.ask("a", at(4000)) {
		t.Fatal("a question after a quiet gap waited")
	}
}
