package actor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestGenSlot(t *testing.T) {
	for name, want := range map[string]int64{
		"$k2j1s9.0": 0, "$k2j1s9.a": 10, "$1.zz": 36*36 - 1,
		"$node": -1, "$k2j1s9": -1, "$.1": -1, "$1.": -1, "$1.01": -1, "$1.A": -1,
		"$0a.1": -1, "x1.1": -1, "$1.1.1": -1, "$1.zzzzzzzzzzzz": -1, "": -1,
	} {
		slot, ok := genSlot(name)
		if got := map[bool]int64{true: int64(slot), false: -1}[ok]; got != want {
			t.Errorf("genSlot(%q) = %d %v, want %d", name, slot, ok, want)
		}
	}
}

// TestGeneratedNamesReuseSlots: a stopped actor's slot goes to the next
// generated name, and the stopped actor's Ref reaches nobody (not the new
// actor in its slot).
func TestGeneratedNamesReuseSlots(t *testing.T) {
	s := newSys(t)
	got := make(chan string, 1)
	old := mustSpawn(t, s, "", func(c *Context) {
		c.Receive(On(func(string) { c.Stop() }))
	})
	down := watcher(t, s, old)
	s.Send(old, "stop")
	recv(t, down)
	// The old slot is free now (the name goes before the Down), and so
	// may be the watcher's: one of the next two generated names takes it.
	oldSlot, _ := genSlot(old.Name())
	var fresh Ref
	for range 2 {
		ref := mustSpawn(t, s, "", func(c *Context) {
			var h Case
			h = On(func(m string) { got <- m; c.Receive(h) })
			c.Receive(h)
		})
		if slot, ok := genSlot(ref.Name()); ok && slot == oldSlot {
			fresh = ref
		}
	}
	if fresh.IsZero() || fresh == old {
		t.Fatalf("slot %d of %v was not reused", oldSlot, old)
	}
	dead := s.DeadLetters()
	s.Send(old, "to the old one")
	s.Send(fresh, "to the new one")
	if m := recv(t, got); m != "to the new one" {
		t.Fatalf("the new actor got %q", m)
	}
	if s.DeadLetters() != dead+1 {
		t.Fatalf("dead letters %d, want %d", s.DeadLetters(), dead+1)
	}
	if _, ok := s.Whereis(old.Name()); ok {
		t.Fatal("Whereis found the stopped actor's name")
	}
	if r, ok := s.Whereis(fresh.Name()); !ok || r != fresh {
		t.Fatalf("Whereis(%q) = %v %v", fresh.Name(), r, ok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Ask(ctx, old, "ask"); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("ask to the old Ref: %v, want ErrNoSuchActor", err)
	}
}

// TestNamesOfTheGeneratedForm: a system name of the generated form is
// refused (it would miss the slot table); other '$' names are served by
// the map.
func TestNamesOfTheGeneratedForm(t *testing.T) {
	s := newSys(t)
	for _, name := range []string{"$abc.1", "$svc.x1"} {
		if _, err := s.Spawn(name, failOn(nil), systemName()); !errors.Is(err, ErrInvalidName) {
			t.Fatalf("spawn %q: %v, want ErrInvalidName", name, err)
		}
	}
	for _, name := range []string{"$node", "$svc.X1", "$svc.01"} {
		ref := mustSpawn(t, s, name, failOn(nil), systemName())
		if r, ok := s.Whereis(name); !ok || r != ref {
			t.Fatalf("Whereis(%q) = %v %v", name, r, ok)
		}
	}
}

// TestGeneratedNamesConcurrently spawns and stops unnamed actors from many
// goroutines: every live one is found by its name, Shutdown reaches all.
func TestGeneratedNamesConcurrently(t *testing.T) {
	s := newSys(t)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	refs := make(chan Ref, workers*each)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ref := mustSpawn(t, s, "", func(c *Context) {
					c.Receive(On(func(string) { c.Stop() }))
				})
				if i%2 == 0 {
					s.Send(ref, "stop") // half stop at once, freeing slots
					continue
				}
				refs <- ref
			}
		}()
	}
	wg.Wait()
	close(refs)
	seen := map[Ref]bool{}
	for ref := range refs {
		if seen[ref] {
			t.Fatalf("%v handed out twice", ref)
		}
		seen[ref] = true
		if r, ok := s.Whereis(ref.Name()); !ok || r != ref {
			t.Fatalf("Whereis(%v) = %v %v", ref, r, ok)
		}
	}
	if n := len(s.names.all()); n < len(seen) {
		t.Fatalf("registry lists %d actors, want at least %d", n, len(seen))
	}
}
