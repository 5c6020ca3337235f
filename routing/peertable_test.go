package routing

import (
	"errors"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
)

// The peer table alone: events in, actions out, no hosts. Each scenario
// follows a row of the loss protocol's table in docs/routing.md, or the
// incarnations and connections that the last rows rely on.

// tconn is a connection as the table sees it: a key, closed or not.
type tconn struct {
	network.Conn
	name   string
	closed bool
}

// step is one event and the actions it must call for.
type step struct {
	name string
	ev   func(t *peerTable, acts []peerAction) []peerAction
	want []peerAction
	// check, if not nil, looks at the table after the step.
	check func(t *peerTable) bool
}

const tp = "peer-p" // the other peer (a libp2ppeer.ID)

func down(why downReason) peerAction { return peerAction{kind: actPeerDown, peer: tp, why: why} }

var (
	forgetP = peerAction{kind: actForget, peer: tp}
	wakeP   = peerAction{kind: actWake, peer: tp}
)

func helloP(inc uint64, c *tconn) step {
	return step{name: "hello", ev: func(t *peerTable, a []peerAction) []peerAction {
		if c == nil {
			return t.hello(a, tp, inc, nil)
		}
		return t.hello(a, tp, inc, c)
	}}
}

func TestPeerTableScenarios(t *testing.T) {
	old, old2 := &tconn{name: "old"}, &tconn{name: "old2"}
	dead := &tconn{name: "dead"}
	cur := &tconn{name: "cur"}
	with := func(s step, want ...peerAction) step { s.want = want; return s }
	check := func(s step, f func(t *peerTable) bool) step { s.check = f; return s }
	ev := func(name string, f func(t *peerTable, a []peerAction) []peerAction, want ...peerAction) step {
		return step{name: name, ev: f, want: want}
	}
	for _, sc := range []struct {
		name  string
		steps []step
	}{
		{"a write fails on a live connection: declared, the lostBody queued, the next hello says Lost", []step{
			helloP(1, nil),
			check(ev("declared 3", func(t *peerTable, a []peerAction) []peerAction { return t.declared(a, tp, 3, false, true) },
				peerAction{kind: actSendLost, peer: tp, seq: 3}, down(downDeclared)),
				func(t *peerTable) bool { return t.lost(tp) == 3 }),
		}},
		{"the control stream itself broke: its writer has the lostBody first already", []step{
			check(ev("declared 4, in hand", func(t *peerTable, a []peerAction) []peerAction { return t.declared(a, tp, 4, false, false) },
				down(downDeclared)),
				func(t *peerTable) bool { return t.lost(tp) == 4 }),
			check(ev("an older number does not go back", func(t *peerTable, a []peerAction) []peerAction { return t.declared(a, tp, 2, false, true) },
				peerAction{kind: actSendLost, peer: tp, seq: 2}, down(downDeclared)),
				func(t *peerTable) bool { return t.lost(tp) == 4 }),
		}},
		{"a declaration numbered before the peer left: down, neither remembered nor sent", []step{
			check(ev("stale", func(t *peerTable, a []peerAction) []peerAction { return t.declared(a, tp, 5, true, true) },
				down(downDeclared)),
				func(t *peerTable) bool { return t.lost(tp) == 0 }),
		}},
		{"a reader resets a user stream: the peer is asked, and its next user stream waits", []step{
			helloP(1, nil),
			check(ev("reset", func(t *peerTable, a []peerAction) []peerAction { return t.askLoss(a, tp, true, 9) },
				peerAction{kind: actAskLoss, peer: tp, seq: 9}),
				func(t *peerTable) bool { return !t.awaited(tp, 0) }),
			check(ev("its lostBody", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 1, 0) },
				down(downHeard)),
				func(t *peerTable) bool { return !t.awaited(tp, 0) }), // heard, not yet acted on
			check(ev("acted on", func(t *peerTable, a []peerAction) []peerAction { return t.actedOn(a, tp, 1, genOf(t)) }, wakeP),
				func(t *peerTable) bool { return t.awaited(tp, 0) }),
		}},
		{"a control stream reset asks, and holds back no user stream", []step{
			helloP(1, nil),
			check(ev("reset", func(t *peerTable, a []peerAction) []peerAction { return t.askLoss(a, tp, false, 2) },
				peerAction{kind: actAskLoss, peer: tp, seq: 2}),
				func(t *peerTable) bool { return t.awaited(tp, 0) }),
		}},
		{"a peer not known is asked nothing: its disconnection took it down", []step{
			ev("reset", func(t *peerTable, a []peerAction) []peerAction { return t.askLoss(a, tp, true, 2) }),
		}},
		{"a lostBody is acted on once, and not after a later one", []step{
			helloP(1, nil),
			ev("lost 2", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 2, 0) }, down(downHeard)),
			ev("lost 2 again", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 2, 0) }),
			ev("lost 1, late", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 1, 0) }),
			ev("lost 3", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 3, 0) }, down(downHeard)),
		}},
		{"a lostBody from a peer not known (gone) does nothing", []step{
			ev("lost 2", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 2, 0) }),
		}},
		{"a user stream's hello says Lost: it waits until that was acted on", []step{
			helloP(1, nil),
			check(ev("nothing yet", func(*peerTable, []peerAction) []peerAction { return nil }),
				func(t *peerTable) bool { return !t.awaited(tp, 5) }),
			ev("lost 5", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 5, 0) }, down(downHeard)),
			check(ev("acted on", func(t *peerTable, a []peerAction) []peerAction { return t.actedOn(a, tp, 5, genOf(t)) }, wakeP),
				func(t *peerTable) bool { return t.awaited(tp, 5) && !t.awaited(tp, 6) }),
			ev("acted on again", func(t *peerTable, a []peerAction) []peerAction { return t.actedOn(a, tp, 5, genOf(t)) }),
		}},
		{"an older peer sends no lostBody: presumed after lossWait, and its next real one still counts", []step{
			helloP(1, nil),
			ev("reset here", func(t *peerTable, a []peerAction) []peerAction { return t.askLoss(a, tp, true, 1) },
				peerAction{kind: actAskLoss, peer: tp, seq: 1}),
			ev("presumed (hello said Lost 0)", func(t *peerTable, a []peerAction) []peerAction { return t.presumed(a, tp, 0) },
				down(downPresumed)),
			check(ev("done", func(t *peerTable, a []peerAction) []peerAction { return t.presumedDone(a, tp, 0, genOf(t)) }, wakeP),
				func(t *peerTable) bool { return t.awaited(tp, 0) }),
			ev("its real declaration 1", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 1, 0) }, down(downHeard)),
		}},
		{"presumed, the one its hello announced counts as heard and acted on", []step{
			helloP(1, nil),
			ev("presumed 4", func(t *peerTable, a []peerAction) []peerAction { return t.presumed(a, tp, 4) }, down(downPresumed)),
			check(ev("done", func(t *peerTable, a []peerAction) []peerAction { return t.presumedDone(a, tp, 4, genOf(t)) }, wakeP),
				func(t *peerTable) bool { return t.awaited(tp, 4) }),
			ev("lost 4 arrives late", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 4, 0) }),
		}},
		{"the peer disconnects: down, what was known of its losses goes, its link is retired if idle", []step{
			helloP(1, cur),
			ev("declared", func(t *peerTable, a []peerAction) []peerAction { return t.declared(a, tp, 7, false, true) },
				peerAction{kind: actSendLost, peer: tp, seq: 7}, down(downDeclared)),
			ev("lost 3", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 3, 0) }, down(downHeard)),
			check(ev("gone", func(t *peerTable, a []peerAction) []peerAction { return t.gone(a, tp) }, forgetP, down(downGone), peerAction{kind: actRetire, peer: tp}),
				func(t *peerTable) bool { return t.lost(tp) == 0 && !t.known(tp) && len(t.peers) == 0 }),
			ev("its lostBody 3, read late", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 3, 0) }),
			ev("acted on late", func(t *peerTable, a []peerAction) []peerAction { return t.actedOn(a, tp, 3, genOf(t)) }),
		}},
		{"the peer restarts: its old connections close, losses go, down, restarted", []step{
			with(helloP(1, old), nil...),
			with(helloP(1, old2), nil...),
			with(helloP(1, dead), nil...),
			ev("lost 3", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 3, 0) }, down(downHeard)),
			ev("dead closes", func(t *peerTable, a []peerAction) []peerAction { dead.closed = true; return a }),
			check(with(helloP(2, cur), forgetP,
				peerAction{kind: actCloseConn, peer: tp, conn: old}, peerAction{kind: actCloseConn, peer: tp, conn: old2},
				down(downRestarted), peerAction{kind: actRestarted, peer: tp}),
				func(t *peerTable) bool {
					st := t.peers[tp]
					return st.inc == 2 && st.heard == 0 && len(st.conns) == 1 && st.conns[cur] == 2
				}),
			with(helloP(2, cur), nil...), // the same again: nothing
			ev("its new declarations number anew", func(t *peerTable, a []peerAction) []peerAction { return t.heard(a, tp, 1, 0) }, down(downHeard)),
		}},
		{"the first incarnation heard is no restart", []step{
			with(helloP(5, nil), nil...),
			check(with(helloP(5, cur), nil...), func(t *peerTable) bool { return t.known(tp) }),
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			old.closed, old2.closed, dead.closed, cur.closed = false, false, false, false
			tab := newPeerTable(func(c network.Conn) bool { return c.(*tconn).closed })
			for i, s := range sc.steps {
				got := s.ev(&tab, nil)
				for i := range got {
					got[i].gen = 0
				}
				sortCloses(got)
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d (%s): actions %+v, want %+v", i, s.name, got, s.want)
				}
				if s.check != nil && !s.check(&tab) {
					t.Fatalf("step %d (%s): table %+v", i, s.name, tab.peers[tp])
				}
			}
		})
	}
}

// sortCloses orders the actions closing connections by name: the table
// finds them in a map.
func sortCloses(acts []peerAction) {
	i := slices.IndexFunc(acts, func(a peerAction) bool { return a.kind == actCloseConn })
	if i < 0 {
		return
	}
	j := i
	for j < len(acts) && acts[j].kind == actCloseConn {
		j++
	}
	slices.SortFunc(acts[i:j], func(a, b peerAction) int {
		x, y := a.conn.(*tconn).name, b.conn.(*tconn).name
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
}

// The last row: a broken stream whose connection closed declares nothing
// (lossAt), nor does one the peer reset; one given up here does.
func TestLossAtDeclaresOnlyOwnLossesOnLiveConnections(t *testing.T) {
	live := &fakeStream{}
	closed := &closedStream{}
	for _, c := range []struct {
		name string
		s    network.Stream
		err  error
		want bool
	}{
		{"no stream", nil, errors.New("x"), false},
		{"no error: the connection closed", live, nil, false},
		{"on a closed connection", closed, errors.New("deadline"), false},
		{"reset by the peer, with a code", live, &network.StreamError{Remote: true}, false},
		{"reset here, with a code", live, &network.StreamError{Remote: false}, true},
		{"reset without a code: the peer's", live, network.ErrReset, false},
		{"a write deadline", live, errors.New("i/o deadline reached"), true},
	} {
		if got := lossAt(c.s, c.err); got != c.want {
			t.Errorf("%s: lossAt = %v, want %v", c.name, got, c.want)
		}
	}
}

// closedStream is a stream whose connection closed.
type closedStream struct{ network.Stream }

func (closedStream) Conn() network.Conn { return closedConn{} }

type closedConn struct{ network.Conn }

func (closedConn) IsClosed() bool { return true }

// The inbound streams of a peer and protocol: at most max read at once,
// and a hello ends the streams its writer opened before (supersede).
func TestPeerTableStreams(t *testing.T) {
	key := inboundKey{peer: tp}
	tab := newPeerTable(nil)
	rs := make([]*reader, 4)
	for i := range rs {
		rs[i] = &reader{}
		if !tab.streamOpened(key, rs[i], 3) != (i == 3) {
			t.Fatalf("stream %d: taken %v with %d open, at most 3", i, !(i == 3), i)
		}
	}
	tab.streamEnded(key, rs[1])
	if !tab.streamOpened(key, rs[3], 3) {
		t.Fatal("a stream that ended still counts")
	}
	// Open now, oldest first: 0, 2, 3.
	hello := func(rd *reader, inc, seq uint64) ([]*reader, bool) {
		acts, ok := tab.streamHello(nil, key, rd, helloBody{Incarnation: inc, Stream: seq})
		var older []*reader
		for _, a := range acts {
			if a.kind != actResetStream || a.peer != tp {
				t.Fatalf("action %+v", a)
			}
			older = append(older, a.rd)
		}
		return older, ok
	}
	if older, ok := hello(rs[2], 1, 5); !ok || len(older) != 0 {
		t.Fatalf("the first numbered hello, with an older stream not helloed: %v, %v; want none reset", older, ok)
	}
	if older, ok := hello(rs[0], 1, 4); ok || len(older) != 0 {
		t.Fatalf("a hello older than one read: %v, %v; want stale", older, ok)
	}
	if older, ok := hello(rs[3], 1, 6); !ok || !slices.Equal(older, []*reader{rs[0], rs[2]}) {
		t.Fatalf("hello 6: %v, %v; want 4 (stale itself) and 5 reset", older, ok)
	}
	tab.streamEnded(key, rs[0])
	tab.streamEnded(key, rs[2])
	// Unnumbered (an older peer): those that arrived before it go.
	late := &reader{}
	tab.streamOpened(key, late, 3)
	if older, ok := hello(late, 2, 0); !ok || !slices.Equal(older, []*reader{rs[3]}) {
		t.Fatalf("an unnumbered hello: %v, %v; want the stream before it reset", older, ok)
	}
	tab.streamEnded(key, rs[3])
	tab.streamEnded(key, late)
	if len(tab.streams) != 0 {
		t.Fatalf("streams left: %v", tab.streams)
	}
}

func genOf(t *peerTable) uint64 {
	if st := t.peers[tp]; st != nil {
		return st.gen
	}
	return 0
}
