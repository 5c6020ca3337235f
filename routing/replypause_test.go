package routing

import (
	"testing"
	"time"
)

// TestReplyPauseTable runs the reply pause's steps and notices from a
// fresh state, each row one event, and checks what each returns.
func TestReplyPauseTable(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// stalled: a write waiting since w ms, the queue full; idle: none.
	stalled := func(now, w int, asks bool) pauseFacts {
		return pauseFacts{now: at(now), writing: at(w), queued: 64, bound: 64, asks: asks}
	}
	type ev struct {
		facts  *pauseFacts // a step, or
		notice *bool       // a notice heard at time ms
		ms     int
		want   pauseAct
	}
	on, off := true, false
	step := func(f pauseFacts, want pauseAct) ev { return ev{facts: &f, want: want} }
	heard := func(b *bool, ms int, want pauseAct) ev { return ev{notice: b, ms: ms, want: want} }
	cases := []struct {
		name   string
		higher bool
		evs    []ev
	}{
		{"a stall short of stallAfter: read on", false, []ev{
			step(stalled(999, 0, true), pauseKeep),
		}},
		{"stalled with asks: paused", false, []ev{
			step(stalled(1000, 0, true), pauseStart),
			step(stalled(2000, 0, true), pauseKeep),
		}},
		{"stalled without asks: read on", false, []ev{
			step(stalled(5000, 0, false), pauseKeep),
		}},
		{"a queue under half: read on", false, []ev{
			step(pauseFacts{now: at(5000), writing: at(0), queued: 31, bound: 64, asks: true}, pauseKeep),
			step(pauseFacts{now: at(5000), writing: at(0), queued: 32, bound: 64, asks: true}, pauseStart),
		}},
		{"no write waiting: read on", false, []ev{
			step(pauseFacts{now: at(5000), queued: 64, bound: 64, asks: true}, pauseKeep),
		}},
		{"the write ends: resumed", false, []ev{
			step(stalled(1000, 0, true), pauseStart),
			step(pauseFacts{now: at(1100), queued: 64, bound: 64}, pauseEnd),
		}},
		{"a newer write waits: resumed (the old one went)", false, []ev{
			step(stalled(1000, 0, true), pauseStart),
			step(stalled(1100, 1050, true), pauseEnd),
		}},
		{"the grace ends it, and a stall counts anew from there", false, []ev{
			step(stalled(1000, 0, true), pauseStart),
			step(stalled(5999, 0, true), pauseKeep),
			step(stalled(6000, 0, true), pauseEnd),
			step(stalled(6999, 0, true), pauseKeep),
			step(stalled(7000, 0, true), pauseStart),
		}},
		{"told it paused us: we do not pause it", false, []ev{
			heard(&on, 500, pauseKeep),
			step(stalled(3000, 0, true), pauseKeep),
			heard(&off, 3100, pauseKeep),
			step(stalled(3200, 0, true), pauseStart),
		}},
		{"both paused, we are higher: we resume", true, []ev{
			step(stalled(1000, 0, true), pauseStart),
			heard(&on, 1010, pauseEnd),
			step(stalled(2500, 0, true), pauseKeep), // told: no new pause
		}},
		{"both paused, we are lower: we keep ours", false, []ev{
			step(stalled(1000, 0, true), pauseStart),
			heard(&on, 1010, pauseKeep),
			step(stalled(1500, 0, true), pauseKeep),
		}},
		{"a told pause lapses after grace+stallAfter without its end", false, []ev{
			heard(&on, 0, pauseKeep),
			step(stalled(5999, 0, true), pauseKeep),
			step(stalled(6000, 0, true), pauseStart),
		}},
		{"a peer claiming pauses all the time is believed within a budget", false, []ev{
			heard(&on, 0, pauseKeep),
			// lapsed at 6 s, a debt of 6 s: not believed before it
			// decayed under stallAfter, 20 s later.
			heard(&on, 6000, pauseKeep),
			step(stalled(7000, 0, true), pauseStart),
			step(stalled(12000, 0, true), pauseEnd),
			heard(&on, 25000, pauseKeep),
			step(stalled(25500, 24000, true), pauseStart),
			step(stalled(30500, 24000, true), pauseEnd),
			heard(&on, 31001, pauseKeep), // believed: the debt decayed
			step(stalled(34000, 24000, true), pauseKeep),
		}},
		{"short told pauses cost no belief", false, []ev{
			heard(&on, 0, pauseKeep), heard(&off, 200, pauseKeep),
			heard(&on, 1000, pauseKeep), heard(&off, 1200, pauseKeep),
			heard(&on, 2000, pauseKeep),
			step(stalled(2500, 0, true), pauseKeep), // believed
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newReplyPause(time.Second, 5*time.Second, c.higher)
			for i, e := range c.evs {
				var got pauseAct
				if e.facts != nil {
					got = p.step(*e.facts)
				} else {
					got = p.heard(*e.notice, at(e.ms))
				}
				if got != e.want {
					t.Fatalf("event %d: got %d, want %d (state %+v)", i, got, e.want, p)
				}
			}
		})
	}
}

// TestReplyPauseAtMostOnePaused: two peers that each see their link to
// the other stalled and asks coming, stepping in every order with the
// notices delivered, never both stay paused once the notices arrived.
func TestReplyPauseAtMostOnePaused(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, aFirst := range []bool{true, false} {
		a := newReplyPause(time.Second, 5*time.Second, true)
		b := newReplyPause(time.Second, 5*time.Second, false)
		f := pauseFacts{now: t0.Add(2 * time.Second), writing: t0, queued: 8, bound: 8, asks: true}
		first, second := &a, &b
		if !aFirst {
			first, second = &b, &a
		}
		// Both decide before either notice arrives.
		if first.step(f) != pauseStart || second.step(f) != pauseStart {
			t.Fatal("both should pause on a stall without notices")
		}
		// The notices cross.
		a.heard(true, f.now)
		b.heard(true, f.now)
		if a.paused && b.paused {
			t.Fatalf("aFirst=%v: both paused after the notices", aFirst)
		}
		if a.paused || !b.paused {
			t.Fatalf("aFirst=%v: the higher (a) should have resumed, the lower kept its pause", aFirst)
		}
	}
}
