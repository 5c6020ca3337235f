package actor

import (
	"errors"
	"testing"
)

func TestLocalGroupBroadcastReachesEachMemberOnce(t *testing.T) {
	s := newSys(t)
	got := make(chan [2]any, 16)
	ready := make(chan struct{}, 3)
	member := func(name string) Behavior {
		return func(c *Context) {
			if err := c.join("room", false); err != nil {
				t.Error(err)
			}
			ready <- struct{}{}
			forever(c, func() []Case {
				return []Case{On(func(m string) { got <- [2]any{name, m} }), On(func(struct{}) { c.leave("room"); got <- [2]any{name, "left"} })}
			})
		}
	}
	a := mustSpawn(t, s, "a", member("a"))
	mustSpawn(t, s, "b", member("b"))
	mustSpawn(t, s, "c", func(c *Context) { member("c")(c); c.Stop() }) // joins, then stops
	for range 3 {
		recv(t, ready)
	}
	downs := watcher(t, s, refOf(s.Peer(), "c"))
	recv(t, downs) // c left the group by stopping
	if err := s.publish("room", Ref{}, "hi"); err != nil {
		t.Fatal(err)
	}
	seen := map[any]int{}
	for range 2 {
		seen[recv(t, got)[0]]++
	}
	if seen["a"] != 1 || seen["b"] != 1 {
		t.Fatalf("deliveries %v", seen)
	}
	s.Send(a, struct{}{}) // a leaves
	if g := recv(t, got); g != [2]any{"a", "left"} {
		t.Fatalf("got %v", g)
	}
	mustSpawn(t, s, "", func(c *Context) {
		c.Send(a, "after leave?") // a is still alive: a direct message
		if err := c.sys.publish("room", c.Self(), "second"); err != nil {
			t.Error(err)
		}
	})
	want := map[[2]any]bool{{"a", "after leave?"}: true, {"b", "second"}: true}
	for range 2 {
		g := recv(t, got)
		if !want[g] {
			t.Fatalf("unexpected delivery %v", g)
		}
		delete(want, g)
	}
	if n := s.groupMembers("room"); n != 1 {
		t.Fatalf("%d members left", n)
	}
	if err := s.publish("empty", Ref{}, "x"); !errors.Is(err, errNoGroups) {
		t.Fatalf("publish to a group without members: %v", err)
	}
}

func TestLocalPresence(t *testing.T) {
	s := newSys(t)
	events := make(chan [2]string, 16)
	watcher := func(name string, watch bool) Behavior {
		return func(c *Context) {
			if err := c.join("g", watch); err != nil {
				t.Error(err)
			}
			forever(c, func() []Case {
				return []Case{
					On(func(j joinedMsg) { events <- [2]string{name, "joined " + j.Member.Name()} }),
					On(func(l leftMsg) { events <- [2]string{name, "left " + l.Member.Name()} }),
					On(func(struct{}) { c.Stop() }),
				}
			})
		}
	}
	a := mustSpawn(t, s, "a", watcher("a", true))
	mustSpawn(t, s, "quiet", watcher("quiet", false)) // joins without watching
	if e := recv(t, events); e != [2]string{"a", "joined quiet"} {
		t.Fatalf("event %v", e)
	}
	mustSpawn(t, s, "b", watcher("b", true))
	got := map[[2]string]bool{recv(t, events): true, recv(t, events): true, recv(t, events): true}
	for _, w := range [][2]string{{"a", "joined b"}, {"b", "joined a"}, {"b", "joined quiet"}} {
		if !got[w] {
			t.Fatalf("events %v lack %v", got, w)
		}
	}
	s.Send(a, struct{}{}) // a stops, leaving the group
	if e := recv(t, events); e != [2]string{"b", "left a"} {
		t.Fatalf("event %v", e)
	}
}

// Members of other peers are recorded only while the group has a local
// member (the transport listens to the group only then), and forgotten
// when the transport stops listening, unless a local member joined again.
func TestRemoteMembersOnlyWhileListening(t *testing.T) {
	s := newSys(t)
	far := refOf("other", "far")
	if s.port.DeliverPresence("g", far, true) {
		t.Fatal("a member of another peer was recorded for a group without a local member")
	}
	joined := make(chan struct{})
	stop := make(chan struct{})
	mustSpawn(t, s, "m", func(c *Context) {
		if err := c.join("g", false); err != nil {
			t.Error(err)
		}
		close(joined)
		c.Receive(On(func(struct{}) { c.leave("g"); close(stop) }))
	})
	recv(t, joined)
	if !s.port.DeliverPresence("g", far, true) {
		t.Fatal("a member of another peer was not recorded")
	}
	s.port.ForgetGroupMembers("g") // a local member: kept
	if s.port.DeliverPresence("g", far, true) {
		t.Fatal("forgotten while the group has a local member")
	}
	s.Send(refOf(s.Peer(), "m"), struct{}{})
	recv(t, stop)
	s.port.ForgetGroupMembers("g")
	if s.port.DeliverPresence("g", far, false) {
		t.Fatal("a forgotten member left again")
	}
}
