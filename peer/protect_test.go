package peer

import (
	"slices"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/troupe-mesh/troupe/routing"
)

// TestProtection follows the policy as data: what keeps a connection from
// being trimmed, and for how long traffic does.
func TestProtection(t *testing.T) {
	const grace = 10 * time.Second
	t0 := time.Unix(1000, 0)
	moved := routing.PeerActivity{Sent: 3, Received: 1}
	for _, tc := range []struct {
		name string
		prev peerMark
		f    peerFacts
		now  time.Time
		want protectReason
		mark peerMark // the next mark
	}{
		{name: "idle, never seen", now: t0},
		{name: "a monitor or link", f: peerFacts{edges: 1}, now: t0, want: protEdges},
		{name: "messages queued", f: peerFacts{activity: routing.PeerActivity{Busy: true}}, now: t0, want: protBusy},
		{name: "messages held", f: peerFacts{activity: routing.PeerActivity{Held: 10}}, now: t0, want: protHeld},
		{name: "first traffic", f: peerFacts{activity: moved}, now: t0, want: protTraffic,
			mark: peerMark{sent: 3, received: 1, active: t0}},
		{name: "traffic within grace", prev: peerMark{sent: 3, received: 1, active: t0}, f: peerFacts{activity: moved},
			now: t0.Add(grace - time.Millisecond), want: protTraffic, mark: peerMark{sent: 3, received: 1, active: t0}},
		{name: "traffic a grace ago", prev: peerMark{sent: 3, received: 1, active: t0}, f: peerFacts{activity: moved},
			now: t0.Add(grace), mark: peerMark{sent: 3, received: 1, active: t0}},
		{name: "a message read renews it", prev: peerMark{sent: 3, received: 1, active: t0},
			f: peerFacts{activity: routing.PeerActivity{Sent: 3, Received: 2}}, now: t0.Add(time.Hour), want: protTraffic,
			mark: peerMark{sent: 3, received: 2, active: t0.Add(time.Hour)}},
		{name: "counters reset by a new connection", prev: peerMark{sent: 3, received: 1, active: t0}, f: peerFacts{},
			now: t0.Add(time.Hour), want: protTraffic, mark: peerMark{active: t0.Add(time.Hour)}},
		{name: "a relay reservation served", f: peerFacts{tags: map[string]int{relayReservationTag: 10}}, now: t0, want: protRelay},
		{name: "a relay circuit served", f: peerFacts{tags: map[string]int{relayHopTag: 2}}, now: t0, want: protRelay},
		{name: "a directory exchange open", f: peerFacts{exchange: true}, now: t0, want: protExchange},
		{name: "a circuit tag at zero", f: peerFacts{tags: map[string]int{relayHopTag: 0, "kbucket": 5}}, now: t0},
		{name: "everything", prev: peerMark{active: t0}, f: peerFacts{edges: 2, activity: routing.PeerActivity{Busy: true, Held: 1},
			tags: map[string]int{relayHopTag: 2}, exchange: true}, now: t0.Add(time.Second),
			want: protEdges | protBusy | protHeld | protTraffic | protRelay | protExchange, mark: peerMark{active: t0}},
	} {
		got, mark := protection(tc.prev, tc.f, tc.now, grace)
		if got != tc.want || mark != tc.mark {
			t.Errorf("%s: protection %06b, mark %+v; want %06b, %+v", tc.name, got, mark, tc.want, tc.mark)
		}
	}
}

func TestGuardEvery(t *testing.T) {
	for grace, want := range map[time.Duration]time.Duration{
		0: 20 * time.Millisecond, 100 * time.Millisecond: 20 * time.Millisecond,
		time.Second: 125 * time.Millisecond, DefaultConnsGrace: time.Second,
	} {
		if got := guardEvery(grace); got != want {
			t.Errorf("guardEvery(%v) = %v, want %v", grace, got, want)
		}
	}
}

// TestToTrim follows the trim as data: down to low peers in all, the
// protected and the young spared, least valued first.
func TestToTrim(t *testing.T) {
	const grace = 10 * time.Second
	now := time.Unix(1000, 0)
	old, young := now.Add(-grace), now.Add(-grace+time.Millisecond)
	id := func(s string) libp2ppeer.ID { return libp2ppeer.ID(s) }
	c := func(name string, protected bool, first time.Time, value int) trimCandidate {
		return trimCandidate{id: id(name), protected: protected, firstSeen: first, value: value}
	}
	q := func(name string, protected bool, first time.Time, value int) trimCandidate {
		tc := c(name, protected, first, value)
		tc.quiet = true
		return tc
	}
	for _, tc := range []struct {
		name  string
		cands []trimCandidate
		low   int
		want  []libp2ppeer.ID
	}{
		{"at low", []trimCandidate{c("a", false, old, 0), c("b", false, old, 0)}, 2, nil},
		{"least value first", []trimCandidate{c("a", false, old, 5), c("b", false, old, 1), c("c", false, old, 3)}, 1,
			[]libp2ppeer.ID{id("b"), id("c")}},
		{"ties by ID", []trimCandidate{c("b", false, old, 0), c("a", false, old, 0), c("c", false, old, 0)}, 2,
			[]libp2ppeer.ID{id("a")}},
		{"protected count toward low", []trimCandidate{c("p", true, old, 0), c("q", true, old, 0), c("a", false, old, 9)}, 2,
			[]libp2ppeer.ID{id("a")}},
		{"more protected than low", []trimCandidate{c("p", true, old, 0), c("q", true, old, 0), c("r", true, old, 0),
			c("a", false, old, 0)}, 2, []libp2ppeer.ID{id("a")}},
		{"young spared", []trimCandidate{c("y", false, young, 0), c("a", false, old, 7), c("b", false, old, 8)}, 1,
			[]libp2ppeer.ID{id("a"), id("b")}},
		{"unknown age spared", []trimCandidate{c("u", false, time.Time{}, 0), c("a", false, old, 0)}, 0,
			[]libp2ppeer.ID{id("a")}},
		// A peer no actor message went to or came from goes after a
		// third of the grace, before the others whatever their value;
		// a younger one, or a protected one, stays.
		{"quiet after a third", []trimCandidate{q("q", false, now.Add(-grace/3), 9), c("y", false, young, 0),
			q("r", false, now.Add(-grace/3+time.Millisecond), 0), q("p", true, old, 0)}, 0,
			[]libp2ppeer.ID{id("q")}},
		{"quiet first", []trimCandidate{c("a", false, old, 0), q("q", false, old, 9), c("b", false, old, 1)}, 1,
			[]libp2ppeer.ID{id("q"), id("a")}},
	} {
		got := toTrim(tc.cands, tc.low, now, grace)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
