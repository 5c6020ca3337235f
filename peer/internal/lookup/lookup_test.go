package lookup

import (
	"fmt"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
)

// The cache of DHT lookups keeps a name found for nameFoundTTL and one
// not found for nameMissTTL, and holds at most its size, dropping the
// expired entries first.
func TestNameCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newNameCache(3)
	c.now = func() time.Time { return now }
	ref, _ := actor.NewRef("peer", "svc")
	c.put("svc", ref)
	c.put("nobody", actor.Ref{})
	if got, ok := c.get("svc"); !ok || got != ref {
		t.Fatalf("svc: %v, %v", got, ok)
	}
	if got, ok := c.get("nobody"); !ok || !got.IsZero() {
		t.Fatalf("nobody: %v, %v; want a cached miss", got, ok)
	}
	now = now.Add(nameMissTTL)
	if _, ok := c.get("nobody"); ok {
		t.Fatal("a miss outlived nameMissTTL")
	}
	if _, ok := c.get("svc"); !ok {
		t.Fatal("a name found expired with the misses")
	}
	now = now.Add(nameFoundTTL - nameMissTTL)
	if _, ok := c.get("svc"); ok {
		t.Fatal("a name found outlived nameFoundTTL")
	}
	for i := range 10 {
		c.put(fmt.Sprint("n", i), ref)
		if len(c.entries) > 3 {
			t.Fatalf("%d entries, bound 3", len(c.entries))
		}
	}
	if _, ok := c.get("n9"); !ok {
		t.Fatal("the last name put is not cached")
	}
}
